import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_3x3_s2_rgb_stem",
    "level": 1,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "MobileNetV2",
    "description": "3x3 conv stride 2 on the RGB image, 3 -> 32 channels, no bias",
    "source": "MobileNetV2 stem conv (features.0.0) at a 128x128 input",
}


class Model(nn.Module):
    def __init__(self, cout):
        super().__init__()
        self.conv = nn.Conv2d(3, cout, 3, stride=2, padding=1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 3, 128, 128)]


def get_init_inputs():
    return [32]
