import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_non_local_block",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "Non-local",
    "description": "Embedded-Gaussian non-local block: theta/phi/g 1x1 projections, softmax(theta^T phi) g, 1x1 out-BN, residual",
    "source": "Non-local Neural Networks (Wang et al. 2018) block at 1/16 of a 128x128 frame (8x8x256, inner 128)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, c, inner):
        super().__init__()
        self.theta = nn.Conv2d(c, inner, 1)
        self.phi = nn.Conv2d(c, inner, 1)
        self.g = nn.Conv2d(c, inner, 1)
        self.out = nn.Sequential(nn.Conv2d(inner, c, 1, bias=False), _bn(c))

    def forward(self, x):
        n, c, h, w = x.shape
        t = self.theta(x).flatten(2).transpose(1, 2)
        p = self.phi(x).flatten(2)
        g = self.g(x).flatten(2).transpose(1, 2)
        y = torch.matmul(torch.softmax(torch.matmul(t, p), dim=-1), g)
        return x + self.out(y.transpose(1, 2).reshape(n, -1, h, w))


def get_inputs():
    return [torch.randn(1, 256, 8, 8)]


def get_init_inputs():
    return [256, 128]
