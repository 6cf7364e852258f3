import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_yolov8_detect_head_level",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "YOLOv8",
    "description": "YOLOv8 decoupled head at one level: box branch (two 3x3 CBS, 1x1 to 64 = 4x16 DFL bins) and class branch (two 3x3 CBS, 1x1 to 80), concat",
    "source": "YOLOv8n (Ultralytics) Detect head, P5 level (256 input channels, 8x8 at a 256x256 input)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


def _cbs(cin, cout, k=3):
    return nn.Sequential(nn.Conv2d(cin, cout, k, padding=k // 2, bias=False), _bn(cout), nn.SiLU())


class Model(nn.Module):
    def __init__(self, c, nc):
        super().__init__()
        self.box = nn.Sequential(_cbs(c, 64), _cbs(64, 64), nn.Conv2d(64, 64, 1))
        self.cls = nn.Sequential(_cbs(c, 80), _cbs(80, 80), nn.Conv2d(80, nc, 1))

    def forward(self, x):
        return torch.cat([self.box(x), self.cls(x)], dim=1)


def get_inputs():
    return [torch.randn(1, 256, 8, 8)]


def get_init_inputs():
    return [256, 80]
