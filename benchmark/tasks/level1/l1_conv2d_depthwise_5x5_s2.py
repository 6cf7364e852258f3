import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv2d_depthwise_5x5_s2",
    "level": 1,
    "domains": ["mobile"],
    "description": "Depthwise 5x5 conv, stride 2",
    "source": "EfficientNet-B0 stage 3 first MBConv depthwise (56x56x144 -> 28x28)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 5, stride=2, padding=2, dilation=1, groups=144, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 144, 56, 56)]


def get_init_inputs():
    return [144, 144]
