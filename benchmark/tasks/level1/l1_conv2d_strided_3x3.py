import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_strided_3x3",
    "level": 1,
    "domains": ["mobile", "aiot", "robotics"],
    "description": "Strided 3x3 conv, stride 2: RGB stem",
    "source": "MobileNetV2 / MobileNetV3 stem at 224x224 (224 -> 112, 3 -> 32)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=2, padding=1, dilation=1, groups=1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 3, 224, 224)]


def get_init_inputs():
    return [3, 32]
