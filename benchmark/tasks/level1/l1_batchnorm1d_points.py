import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_batchnorm1d_points",
    "level": 1,
    "domains": ["robotics"],
    "description": "BatchNorm1d (eval) over 64 channels of 32 points x 1000 pillars",
    "source": "PointPillars pillar feature net BN (channels-first view)",
}


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bn = nn.BatchNorm1d(c, eps=1e-3)
        self.bn.running_mean.uniform_(-0.2, 0.2)
        self.bn.running_var.uniform_(0.5, 1.5)
        self.bn.weight.data.uniform_(0.5, 1.5)
        self.bn.bias.data.uniform_(-0.2, 0.2)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(1000, 64, 32)]


def get_init_inputs():
    return [64]
