import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_depthwise_3x3",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "description": "Depthwise 3x3 conv, stride 1 (groups = channels)",
    "source": "MobileNetV2 block 3 depthwise conv (56x56x144)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=1, padding=1, dilation=1, groups=144, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 144, 56, 56)]


def get_init_inputs():
    return [144, 144]
