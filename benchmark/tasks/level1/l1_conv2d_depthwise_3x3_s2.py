import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_depthwise_3x3_s2",
    "level": 1,
    "domains": ["aiot", "robotics"],
    "description": "Depthwise 3x3 conv, stride 2",
    "source": "MobileNetV1 0.5x layer 4 depthwise (56x56x64 -> 28x28)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=2, padding=1, dilation=1, groups=64, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 64, 56, 56)]


def get_init_inputs():
    return [64, 64]
