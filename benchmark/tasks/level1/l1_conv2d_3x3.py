import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_3x3",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "Standard 3x3 conv, stride 1, pad 1, 64 -> 64 channels, no bias",
    "source": "ResNet-18 layer1 conv at 112x112 input (28x28x64)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=1, padding=1, dilation=1, groups=1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 64, 28, 28)]


def get_init_inputs():
    return [64, 64]
