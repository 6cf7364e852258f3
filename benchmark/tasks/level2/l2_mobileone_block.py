import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_mobileone_block",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "MobileOne",
    "description": "MobileOne depthwise block in training form: 3 over-parameterised dw3x3-BN branches + dw1x1-BN scale branch + identity BN, summed, ReLU",
    "source": "MobileOne-S0 (Vasu et al. 2023) stage 2 depthwise unit (k = 4 branches in S0, here 3) at 32x32x64",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, c, k):
        super().__init__()
        self.branches = nn.ModuleList(
            nn.Sequential(nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False), _bn(c)) for _ in range(k))
        self.scale = nn.Sequential(nn.Conv2d(c, c, 1, groups=c, bias=False), _bn(c))
        self.idn = _bn(c)

    def forward(self, x):
        y = self.scale(x) + self.idn(x)
        for b in self.branches:
            y = y + b(x)
        return F.relu(y)


def get_inputs():
    return [torch.randn(1, 64, 32, 32)]


def get_init_inputs():
    return [64, 3]
