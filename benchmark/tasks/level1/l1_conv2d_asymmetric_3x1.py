import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_asymmetric_3x1",
    "level": 1,
    "domains": ["robotics"],
    "description": "Asymmetric 3x1 conv (factorised), 64 channels",
    "source": "ERFNet non-bottleneck-1D factorised conv (64x64x64 at 512x256 input / 8, cropped)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, (3, 1), stride=1, padding=(1, 0), dilation=1, groups=1, bias=True)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 64, 32, 64)]


def get_init_inputs():
    return [64, 64]
