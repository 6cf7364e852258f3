import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv1d_depthwise_k15",
    "level": 1,
    "domains": ["aiot", "mobile"],
    "description": "Depthwise Conv1d, kernel 15, 144 channels",
    "source": "Conformer-S convolution module depthwise conv (144 channels, 100 frames of 40 ms)",
}


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv1d(c, c, 15, padding=7, groups=c)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 144, 100)]


def get_init_inputs():
    return [144]
