import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_grouped_1x1",
    "level": 1,
    "domains": ["aiot"],
    "family": "ShuffleNetV1",
    "description": "Grouped 1x1 conv, 3 groups, 240 -> 60 channels",
    "source": "ShuffleNetV1 g=3 (Zhang et al. 2018) stage 2 unit bottleneck (240 -> 60) at 16x16",
}


class Model(nn.Module):
    def __init__(self, cin, cout, g):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 1, groups=g, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 240, 16, 16)]


def get_init_inputs():
    return [240, 60, 3]
