import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_blazeblock_double",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "BlazeFace",
    "description": "BlazeFace double block, stride 2: dw5x5 s2 + 1x1 (96 -> 24), ReLU, dw5x5 + 1x1 (24 -> 96), max-pool shortcut, ReLU",
    "source": "BlazeFace (Bazarevsky et al. 2019) double BlazeBlock at the 16x16 -> 8x8 step of a 128x128 face detector",
}


class Model(nn.Module):
    def __init__(self, c, mid):
        super().__init__()
        self.a = nn.Sequential(nn.Conv2d(c, c, 5, 2, 2, groups=c), nn.Conv2d(c, mid, 1), nn.ReLU())
        self.b = nn.Sequential(nn.Conv2d(mid, mid, 5, 1, 2, groups=mid), nn.Conv2d(mid, c, 1))

    def forward(self, x):
        return F.relu(self.b(self.a(x)) + F.max_pool2d(x, 2))


def get_inputs():
    return [torch.randn(1, 96, 16, 16)]


def get_init_inputs():
    return [96, 24]
