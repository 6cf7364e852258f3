import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_r2plus1d_block",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "R(2+1)D",
    "description": "(2+1)D convolution: spatial 1x3x3 conv-BN-ReLU then temporal 3x1x1 conv-BN-ReLU (32 -> 45 -> 32 channels)",
    "source": "R(2+1)D-18 (Tran et al. 2018) conv2_x at 8 frames x 14x14 (clip of a robot camera at 112x112)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, c, m):
        super().__init__()
        self.spatial = nn.Sequential(nn.Conv3d(c, m, (1, 3, 3), padding=(0, 1, 1), bias=False),
                                     _bn(m, nn.BatchNorm3d), nn.ReLU())
        self.temporal = nn.Sequential(nn.Conv3d(m, c, (3, 1, 1), padding=(1, 0, 0), bias=False),
                                      _bn(c, nn.BatchNorm3d), nn.ReLU())

    def forward(self, x):
        return self.temporal(self.spatial(x))


def get_inputs():
    return [torch.randn(1, 32, 8, 14, 14)]


def get_init_inputs():
    return [32, 45]
