import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_depthwise_5x5_s1",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "MobileNetV3-Large",
    "description": "Depthwise 5x5 conv, stride 1, pad 2, 120 channels, no bias",
    "source": "MobileNetV3-Large bneck 5x5 (expanded 120 channels) at a 128x128 input (16x16)",
}


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 5, padding=2, groups=c, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 120, 16, 16)]


def get_init_inputs():
    return [120]
