import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_fused_mbconv",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "EfficientNetV2",
    "description": "Fused-MBConv: 3x3 conv expand 48->192, BN, SiLU, 1x1 project, BN, + x",
    "source": "EfficientNetV2-S stage 3 Fused-MBConv (Tan & Le 2021) at a 128x128 input (16x16x48)",
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
        self.expand = nn.Sequential(nn.Conv2d(c, e, 3, padding=1, bias=False), _bn(e), nn.SiLU())
        self.project = nn.Sequential(nn.Conv2d(e, c, 1, bias=False), _bn(c))

    def forward(self, x):
        return x + self.project(self.expand(x))


def get_inputs():
    return [torch.randn(1, 48, 16, 16)]


def get_init_inputs():
    return [48, 192]
