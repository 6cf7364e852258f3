import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_conv_bn_relu_5x5_lenet",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "LeNet-5",
    "description": "LeNet-5 style stage: 5x5 conv 1 -> 6 (valid), BN, ReLU, 2x2 max pool, 5x5 conv 6 -> 16, ReLU, 2x2 max pool",
    "source": "LeNet-5 (LeCun et al. 1998) feature extractor on a 32x32 MCU sensor image (digits, gestures)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Sequential(nn.Conv2d(1, 6, 5), _bn(6), nn.ReLU(), nn.MaxPool2d(2))
        self.c2 = nn.Sequential(nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2))

    def forward(self, x):
        return self.c2(self.c1(x))


def get_inputs():
    return [torch.randn(1, 1, 32, 32)]


def get_init_inputs():
    return []
