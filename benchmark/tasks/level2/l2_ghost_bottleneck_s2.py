import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_ghost_bottleneck_s2",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "GhostNet",
    "description": "Ghost bottleneck, stride 2: ghost module 24->72, dw3x3 s2 + BN, ghost module 72->40, dw-separable shortcut",
    "source": "GhostNet 1.0x (Han et al. 2020) stage 3 first bottleneck at a 128x128 input (32x32x24 -> 16x16x40)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Ghost(nn.Module):
    def __init__(self, cin, cout, relu):
        super().__init__()
        h = cout // 2
        act = [nn.ReLU()] if relu else []
        self.primary = nn.Sequential(nn.Conv2d(cin, h, 1, bias=False), _bn(h), *act)
        self.cheap = nn.Sequential(nn.Conv2d(h, h, 3, padding=1, groups=h, bias=False), _bn(h), *act)

    def forward(self, x):
        y = self.primary(x)
        return torch.cat([y, self.cheap(y)], dim=1)


class Model(nn.Module):
    def __init__(self, cin, mid, cout):
        super().__init__()
        self.g1 = Ghost(cin, mid, True)
        self.dw = nn.Sequential(nn.Conv2d(mid, mid, 3, 2, 1, groups=mid, bias=False), _bn(mid))
        self.g2 = Ghost(mid, cout, False)
        self.short = nn.Sequential(nn.Conv2d(cin, cin, 3, 2, 1, groups=cin, bias=False), _bn(cin),
                                   nn.Conv2d(cin, cout, 1, bias=False), _bn(cout))

    def forward(self, x):
        return self.g2(self.dw(self.g1(x))) + self.short(x)


def get_inputs():
    return [torch.randn(1, 24, 32, 32)]


def get_init_inputs():
    return [24, 72, 40]
