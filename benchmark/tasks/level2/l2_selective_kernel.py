import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_selective_kernel",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "SKNet",
    "description": "Selective kernel unit: 3x3 and dilated 3x3 grouped branches, fuse by sum, squeeze FC, softmax over branches, weighted sum",
    "source": "SKNet (Li et al. 2019) SK unit (M = 2, G = 32, r = 16) at 16x16x128",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, c, g, d):
        super().__init__()
        self.b1 = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, groups=g, bias=False), _bn(c), nn.ReLU())
        self.b2 = nn.Sequential(nn.Conv2d(c, c, 3, padding=2, dilation=2, groups=g, bias=False), _bn(c), nn.ReLU())
        self.fc = nn.Sequential(nn.Conv2d(c, d, 1, bias=False), _bn(d), nn.ReLU())
        self.att = nn.Conv2d(d, 2 * c, 1)

    def forward(self, x):
        u1, u2 = self.b1(x), self.b2(x)
        z = self.fc(F.adaptive_avg_pool2d(u1 + u2, 1))
        a = torch.softmax(self.att(z).view(x.shape[0], 2, x.shape[1], 1, 1), dim=1)
        return u1 * a[:, 0] + u2 * a[:, 1]


def get_inputs():
    return [torch.randn(1, 128, 16, 16)]


def get_init_inputs():
    return [128, 32, 32]
