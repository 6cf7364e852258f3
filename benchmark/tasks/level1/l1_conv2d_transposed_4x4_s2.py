import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_transposed_4x4_s2",
    "level": 1,
    "domains": ["robotics", "mobile"],
    "description": "Transposed 4x4 conv, stride 2, pad 1: 2x learned upsampling",
    "source": "CenterNet-MobileNet deconv head at reduced width (16x16x64 -> 32x32x32)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.ConvTranspose2d(cin, cout, 4, stride=2, padding=1, dilation=1, groups=1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 64, 16, 16)]


def get_init_inputs():
    return [64, 32]
