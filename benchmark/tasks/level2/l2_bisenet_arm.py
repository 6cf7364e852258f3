import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_bisenet_arm",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "BiSeNet",
    "description": "BiSeNet attention refinement module: 3x3 conv-BN-ReLU, global pool, 1x1 conv-BN, sigmoid, multiply",
    "source": "BiSeNet (Yu et al. 2018) context path ARM on the 1/16 feature (8x8x128 at 128x128)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, cin, c):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(cin, c, 3, padding=1, bias=False), _bn(c), nn.ReLU())
        self.att = nn.Sequential(nn.Conv2d(c, c, 1, bias=False), _bn(c))

    def forward(self, x):
        y = self.conv(x)
        return y * torch.sigmoid(self.att(F.adaptive_avg_pool2d(y, 1)))


def get_inputs():
    return [torch.randn(1, 256, 8, 8)]


def get_init_inputs():
    return [256, 128]
