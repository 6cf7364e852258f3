import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_aspp_small",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "DeepLabV3",
    "description": "ASPP: 1x1, three 3x3 atrous (rates 2/4/6) and an image-pooling branch, each conv-BN-ReLU, concat, 1x1 project",
    "source": "DeepLabV3 (Chen et al. 2017) ASPP on a MobileNetV2 output stride 16 feature (8x8x320 at 128x128), 32-channel branches, rates scaled to the map",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


def _cbr(cin, cout, k=1, d=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, padding=d * (k // 2), dilation=d, bias=False), _bn(cout), nn.ReLU())


class Model(nn.Module):
    def __init__(self, cin, c):
        super().__init__()
        self.b0 = _cbr(cin, c)
        self.b1, self.b2, self.b3 = _cbr(cin, c, 3, 2), _cbr(cin, c, 3, 4), _cbr(cin, c, 3, 6)
        self.pool = _cbr(cin, c)
        self.project = _cbr(5 * c, c)

    def forward(self, x):
        p = self.pool(F.adaptive_avg_pool2d(x, 1)).expand(-1, -1, x.shape[2], x.shape[3])
        return self.project(torch.cat([self.b0(x), self.b1(x), self.b2(x), self.b3(x), p], dim=1))


def get_inputs():
    return [torch.randn(1, 320, 8, 8)]


def get_init_inputs():
    return [320, 32]
