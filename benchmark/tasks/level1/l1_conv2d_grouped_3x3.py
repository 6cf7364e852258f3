import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_grouped_3x3",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "Grouped 3x3 conv, 32 groups of 4 channels",
    "source": "ResNeXt-50 32x4d stage 2 grouped conv at 112x112 input (14x14x256)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=1, padding=1, dilation=1, groups=32, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 256, 14, 14)]


def get_init_inputs():
    return [256, 256]
