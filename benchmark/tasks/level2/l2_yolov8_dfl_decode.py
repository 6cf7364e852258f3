import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_yolov8_dfl_decode",
    "level": 2,
    "domains": ["robotics", "aiot", "mobile"],
    "description": "YOLOv8 DFL box decode: softmax over 16 bins per side, integral, dist2bbox with anchor points, x stride",
    "source": "YOLOv8n at 320x320, all 3 levels concatenated (2100 anchors)",
}


class Model(nn.Module):
    def __init__(self, reg_max):
        super().__init__()
        self.reg_max = reg_max
        self.register_buffer("proj", torch.arange(reg_max, dtype=torch.float32))
        pts, strides = [], []
        for s in (8, 16, 32):
            n = 320 // s
            ys, xs = torch.meshgrid(torch.arange(n) + 0.5, torch.arange(n) + 0.5, indexing="ij")
            pts.append(torch.stack([xs, ys], -1).reshape(-1, 2))
            strides.append(torch.full((n * n, 1), float(s)))
        self.register_buffer("anchors", torch.cat(pts).float())
        self.register_buffer("strides", torch.cat(strides))

    def forward(self, box):
        a = box.shape[1]
        d = (torch.softmax(box.view(1, a, 4, self.reg_max), -1) * self.proj).sum(-1)
        lt, rb = d.chunk(2, -1)
        x1y1, x2y2 = self.anchors - lt, self.anchors + rb
        return torch.cat([(x1y1 + x2y2) / 2, x2y2 - x1y1], -1) * self.strides


def get_inputs():
    return [torch.randn(1, 2100, 64) * 2]


def get_init_inputs():
    return [16]
