import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_dilated_3x3",
    "level": 1,
    "domains": ["robotics", "mobile"],
    "description": "Dilated 3x3 conv, dilation 2, pad 2 (atrous)",
    "source": "DeepLabV3 MobileNetV2 atrous conv, output stride 16 (20x20x96)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=1, padding=2, dilation=2, groups=1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 96, 20, 20)]


def get_init_inputs():
    return [96, 96]
