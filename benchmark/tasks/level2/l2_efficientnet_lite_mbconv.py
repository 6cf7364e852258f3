import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_efficientnet_lite_mbconv",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "EfficientNet-Lite",
    "description": "EfficientNet-Lite MBConv (no SE, ReLU6): 1x1 expand 40->240, dw5x5, 1x1 project, + x",
    "source": "EfficientNet-Lite0 (TF Lite team 2020) stage 3 block at a 128x128 input (16x16x40)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, c, e):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(c, e, 1, bias=False), _bn(e), nn.ReLU6())
        self.dw = nn.Sequential(nn.Conv2d(e, e, 5, padding=2, groups=e, bias=False), _bn(e), nn.ReLU6())
        self.project = nn.Sequential(nn.Conv2d(e, c, 1, bias=False), _bn(c))

    def forward(self, x):
        return x + self.project(self.dw(self.expand(x)))


def get_inputs():
    return [torch.randn(1, 40, 16, 16)]


def get_init_inputs():
    return [40, 240]
