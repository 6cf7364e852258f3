import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_regnetx_block",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "RegNet",
    "description": "RegNetX block: 1x1 conv-BN-ReLU, grouped 3x3 (group width 8) conv-BN-ReLU, 1x1 conv-BN, + x, ReLU",
    "source": "RegNetX-200MF (Radosavovic et al. 2020) stage 3 block (width 152, group width 8) at a 128x128 input (8x8)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, c, gw):
        super().__init__()
        self.a = nn.Sequential(nn.Conv2d(c, c, 1, bias=False), _bn(c), nn.ReLU())
        self.b = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, groups=c // gw, bias=False), _bn(c), nn.ReLU())
        self.c = nn.Sequential(nn.Conv2d(c, c, 1, bias=False), _bn(c))

    def forward(self, x):
        return F.relu(x + self.c(self.b(self.a(x))))


def get_inputs():
    return [torch.randn(1, 152, 8, 8)]


def get_init_inputs():
    return [152, 8]
