import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_pointwise",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "description": "Pointwise (1x1) conv, 96 -> 576 channels (expansion)",
    "source": "MobileNetV2 block 13 expansion 1x1 (14x14x96)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 1, stride=1, padding=0, dilation=1, groups=1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 96, 14, 14)]


def get_init_inputs():
    return [96, 576]
