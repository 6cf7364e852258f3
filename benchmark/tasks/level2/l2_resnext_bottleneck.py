import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_resnext_bottleneck",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "ResNeXt",
    "description": "ResNeXt bottleneck 32x4d: 1x1 256->128, grouped 3x3 (32 groups), 1x1 128->256, BN, + x, ReLU",
    "source": "ResNeXt-50 32x4d (Xie et al. 2017) layer1 block at a 112x112 input (28x28x256)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, c, w, g):
        super().__init__()
        self.a = nn.Sequential(nn.Conv2d(c, w, 1, bias=False), _bn(w), nn.ReLU())
        self.b = nn.Sequential(nn.Conv2d(w, w, 3, padding=1, groups=g, bias=False), _bn(w), nn.ReLU())
        self.c = nn.Sequential(nn.Conv2d(w, c, 1, bias=False), _bn(c))

    def forward(self, x):
        return F.relu(x + self.c(self.b(self.a(x))))


def get_inputs():
    return [torch.randn(1, 256, 28, 28)]


def get_init_inputs():
    return [256, 128, 32]
