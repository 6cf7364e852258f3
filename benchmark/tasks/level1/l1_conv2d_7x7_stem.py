import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_7x7_stem",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "7x7 conv, stride 2, pad 3: ResNet stem",
    "source": "ResNet-18 stem at 112x112 input (3 -> 64, 112 -> 56)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 7, stride=2, padding=3, dilation=1, groups=1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 3, 112, 112)]


def get_init_inputs():
    return [3, 64]
