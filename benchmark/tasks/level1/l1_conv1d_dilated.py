import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv1d_dilated",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "TCN",
    "description": "1-D causal conv, kernel 3, dilation 4 (left pad 8), 64 -> 64 channels over 128 steps",
    "source": "Temporal convolutional network (Bai et al. 2018) level 3 on 128-step IMU sequences",
}


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv1d(c, c, 3, dilation=4)

    def forward(self, x):
        return self.conv(F.pad(x, (8, 0)))


def get_inputs():
    return [torch.randn(1, 64, 128)]


def get_init_inputs():
    return [64]
