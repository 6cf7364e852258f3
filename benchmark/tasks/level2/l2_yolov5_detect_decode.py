import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_yolov5_detect_decode",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "description": "YOLOv5 Detect layer for one level: 1x1 conv, reshape [1,3,85,H,W], sigmoid, grid/anchor box decode",
    "source": "YOLOv5n at 320x320, stride 16 level (20x20x128, 3 anchors, 80 classes)",
}


class Model(nn.Module):
    def __init__(self, c, nc, stride):
        super().__init__()
        self.no, self.na, self.stride = nc + 5, 3, stride
        self.m = nn.Conv2d(c, self.na * self.no, 1)
        self.register_buffer("anchors", torch.tensor([[30.0, 61.0], [62.0, 45.0], [59.0, 119.0]]).view(1, 3, 1, 1, 2))

    def forward(self, x):
        b, _, h, w = x.shape
        y = self.m(x).view(b, self.na, self.no, h, w).permute(0, 1, 3, 4, 2).sigmoid()
        gy = torch.arange(h, dtype=torch.float32).view(1, 1, h, 1).expand(1, 1, h, w)
        gx = torch.arange(w, dtype=torch.float32).view(1, 1, 1, w).expand(1, 1, h, w)
        grid = torch.stack([gx, gy], -1) - 0.5
        xy = (y[..., :2] * 2 + grid) * self.stride
        wh = (y[..., 2:4] * 2) ** 2 * self.anchors
        return torch.cat([xy, wh, y[..., 4:]], -1).view(b, -1, self.no)


def get_inputs():
    return [torch.randn(1, 128, 20, 20)]


def get_init_inputs():
    return [128, 80, 16]
