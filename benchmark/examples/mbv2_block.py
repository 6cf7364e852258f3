"""Embedded example task: a MobileNetV2 inverted-residual block (1x1 expand -> dw 3x3 -> 1x1 project,
BatchNorm + ReLU6, residual), the shape of MobileNetV2's stage 2 at a 112x112 input."""

import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "example_mbv2_block",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "dtype": "float32",
    "description": "MobileNetV2 inverted residual block, expand 4x, 32 channels, 28x28",
    "source": "MobileNetV2 (Sandler et al.), stage 2 block at a 112x112 input",
}


class Model(nn.Module):
    def __init__(self, c: int = 32, t: int = 4):
        super().__init__()
        h = c * t
        self.pw1 = nn.Conv2d(c, h, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(h)
        self.dw = nn.Conv2d(h, h, 3, padding=1, groups=h, bias=False)
        self.bn2 = nn.BatchNorm2d(h)
        self.pw2 = nn.Conv2d(h, c, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(c)
        for bn in (self.bn1, self.bn2, self.bn3):  # non-trivial statistics, so BN folding matters
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.2, 0.2)

    def forward(self, x):
        y = F.relu6(self.bn1(self.pw1(x)))
        y = F.relu6(self.bn2(self.dw(y)))
        return x + self.bn3(self.pw2(y))


def get_inputs():
    return [torch.randn(1, 32, 28, 28)]


def get_init_inputs():
    return [32, 4]
