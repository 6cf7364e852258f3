import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_conv3x3_s2_bn_relu6",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "description": "Strided conv 3x3/2 + BatchNorm + ReLU6: RGB stem",
    "source": "MobileNetV2 stem at 160x160 (160 -> 80, 3 -> 32)",
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
        self.conv = nn.Conv2d(cin, cout, 3, 2, 1, groups=1, bias=False)
        self.bn = _bn(cout)

    def forward(self, x):
        return F.relu6(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(1, 3, 160, 160)]


def get_init_inputs():
    return [3, 32]
