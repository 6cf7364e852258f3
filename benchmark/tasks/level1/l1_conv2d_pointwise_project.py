import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_pointwise_project",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "Pointwise (1x1) projection conv, 384 -> 64 channels",
    "source": "MobileNetV2 block 10 projection 1x1 (14x14x384)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 1, stride=1, padding=0, dilation=1, groups=1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 384, 14, 14)]


def get_init_inputs():
    return [384, 64]
