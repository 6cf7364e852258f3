import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_3x3_hires",
    "level": 1,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "U-Net",
    "description": "Standard 3x3 conv, pad 1, 16 -> 16 channels at full 96x96 resolution",
    "source": "U-Net at 1/4 width (16 channels), first encoder level at 96x96",
}


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 16, 96, 96)]


def get_init_inputs():
    return [16]
