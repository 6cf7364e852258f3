import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_transposed_3x3_s2",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "description": "Transposed 3x3 conv, stride 2, pad 1, output_padding 1",
    "source": "ENet / ERFNet decoder upsampling (32x32x64 -> 64x64x16)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.ConvTranspose2d(cin, cout, 3, stride=2, padding=1, dilation=1, groups=1, bias=True, output_padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 64, 32, 32)]


def get_init_inputs():
    return [64, 16]
