import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_shufflenet_v2_down_unit",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "ShuffleNetV2",
    "description": "ShuffleNetV2 stride-2 unit: two branches (dw3x3 s2 + 1x1 / 1x1 + dw3x3 s2 + 1x1), concat, channel shuffle",
    "source": "ShuffleNetV2 x1.0 (Ma et al. 2018) stage 3 first unit at a 128x128 input (16x16x116 -> 8x8x232)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        h = cout // 2
        self.b1 = nn.Sequential(nn.Conv2d(cin, cin, 3, 2, 1, groups=cin, bias=False), _bn(cin),
                                nn.Conv2d(cin, h, 1, bias=False), _bn(h), nn.ReLU())
        self.b2 = nn.Sequential(nn.Conv2d(cin, h, 1, bias=False), _bn(h), nn.ReLU(),
                                nn.Conv2d(h, h, 3, 2, 1, groups=h, bias=False), _bn(h),
                                nn.Conv2d(h, h, 1, bias=False), _bn(h), nn.ReLU())

    def forward(self, x):
        y = torch.cat([self.b1(x), self.b2(x)], dim=1)
        n, c, hh, w = y.shape
        return y.view(n, 2, c // 2, hh, w).transpose(1, 2).reshape(n, c, hh, w)


def get_inputs():
    return [torch.randn(1, 116, 16, 16)]


def get_init_inputs():
    return [116, 232]
