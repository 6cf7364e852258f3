import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_mnv3_bneck_5x5_se_s2",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "MobileNetV3-Large",
    "description": "MobileNetV3 bneck, stride 2: 1x1 expand 40->240, h-swish, dw5x5 s2, SE (hard-sigmoid), 1x1 project to 80",
    "source": "MobileNetV3-Large bneck with 5x5 dw and SE between the 16x16 and 8x8 stages at a 128x128 input",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, cin, e, cout, r):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(cin, e, 1, bias=False), _bn(e), nn.Hardswish())
        self.dw = nn.Sequential(nn.Conv2d(e, e, 5, 2, 2, groups=e, bias=False), _bn(e), nn.Hardswish())
        self.se1 = nn.Conv2d(e, r, 1)
        self.se2 = nn.Conv2d(r, e, 1)
        self.project = nn.Sequential(nn.Conv2d(e, cout, 1, bias=False), _bn(cout))

    def forward(self, x):
        y = self.dw(self.expand(x))
        s = F.hardsigmoid(self.se2(F.relu(self.se1(F.adaptive_avg_pool2d(y, 1)))))
        return self.project(y * s)


def get_inputs():
    return [torch.randn(1, 40, 16, 16)]


def get_init_inputs():
    return [40, 240, 80, 64]
