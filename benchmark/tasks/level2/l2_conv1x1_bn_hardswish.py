import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_conv1x1_bn_hardswish",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "description": "Pointwise conv + BatchNorm + hardswish (40 -> 240)",
    "source": "MobileNetV3-Small expansion at 224 input (14x14x40)",
}


def _bn(c, eps=1e-5):
    bn = nn.BatchNorm2d(c, eps=eps)
    # non-trivial running statistics so a wrong BN lowering shows up
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 1, 1, 0, groups=1, bias=False)
        self.bn = _bn(cout)

    def forward(self, x):
        return F.hardswish(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(1, 40, 14, 14)]


def get_init_inputs():
    return [40, 240]
