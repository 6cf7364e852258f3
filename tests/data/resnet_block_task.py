"""A ResNet basic block with BatchNorm (eval mode, non-trivial running statistics): the kind of file
a user brings from outside the repo."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c: int = 32):
        super().__init__()
        self.c1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(c)
        self.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(c)
        for bn in (self.b1, self.b2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(x + self.b2(self.c2(y)))


def get_inputs():
    return [torch.randn(1, 32, 28, 28)]


def get_init_inputs():
    return [32]
