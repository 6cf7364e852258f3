import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_mnv3_bneck_hswish",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "MobileNetV3-Large",
    "description": "MobileNetV3 bneck without SE: 1x1 expand 80->200, BN, h-swish, dw3x3, BN, h-swish, 1x1 project, BN, + x",
    "source": "MobileNetV3-Large bneck 8 (exp 200, out 80, h-swish, no SE) at a 128x128 input (8x8)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, c, e):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(c, e, 1, bias=False), _bn(e), nn.Hardswish())
        self.dw = nn.Sequential(nn.Conv2d(e, e, 3, padding=1, groups=e, bias=False), _bn(e), nn.Hardswish())
        self.project = nn.Sequential(nn.Conv2d(e, c, 1, bias=False), _bn(c))

    def forward(self, x):
        return x + self.project(self.dw(self.expand(x)))


def get_inputs():
    return [torch.randn(1, 80, 8, 8)]


def get_init_inputs():
    return [80, 200]
