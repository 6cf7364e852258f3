import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_depthwise_7x7",
    "level": 1,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "ConvNeXt",
    "description": "Depthwise 7x7 conv, pad 3, 96 channels, with bias",
    "source": "ConvNeXt-Tiny stage 1 block dwconv at a 128x128 input (32x32x96)",
}


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 7, padding=3, groups=c)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 96, 32, 32)]


def get_init_inputs():
    return [96]
