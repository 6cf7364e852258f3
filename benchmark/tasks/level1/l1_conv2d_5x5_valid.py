import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_5x5_valid",
    "level": 1,
    "domains": ["aiot"],
    "description": "5x5 conv without padding, 6 -> 16 channels (LeNet-style tiny CNN)",
    "source": "LeNet-5 style MCU digit / gesture classifier conv2 (14x14x6)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 5, stride=1, padding=0, dilation=1, groups=1, bias=True)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 6, 14, 14)]


def get_init_inputs():
    return [6, 16]
