import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_fpn_topdown",
    "level": 2,
    "domains": ["robotics", "mobile"],
    "description": "FPN top-down merge: lateral 1x1 conv, nearest 2x upsample of the coarser level, add, 3x3 smoothing conv",
    "source": "RetinaNet / SSD-FPN P4 merge with 64 channels (C4 20x20x96, P5 10x10x64)",
}


class Model(nn.Module):
    def __init__(self, cin, c):
        super().__init__()
        self.lateral = nn.Conv2d(cin, c, 1)
        self.smooth = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, c4, p5):
        p4 = self.lateral(c4) + F.interpolate(p5, scale_factor=2.0, mode="nearest")
        return self.smooth(p4)


def get_inputs():
    return [torch.randn(1, 96, 20, 20), torch.randn(1, 64, 10, 10)]


def get_init_inputs():
    return [96, 64]
