import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_1x1_s2_shortcut",
    "level": 1,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "ResNet-18",
    "description": "1x1 conv stride 2, 64 -> 128 channels, no bias (projection shortcut)",
    "source": "ResNet-18 layer2.0 downsample conv at 112x112 input (28x28x64 -> 14x14x128)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 1, stride=2, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 64, 28, 28)]


def get_init_inputs():
    return [64, 128]
