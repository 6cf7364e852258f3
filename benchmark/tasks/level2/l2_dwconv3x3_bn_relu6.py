import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_dwconv3x3_bn_relu6",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "description": "Depthwise conv 3x3 + BatchNorm + ReLU6",
    "source": "MobileNetV2 block depthwise stage (56x56x144)",
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
        self.conv = nn.Conv2d(cin, cout, 3, 1, 1, groups=144, bias=False)
        self.bn = _bn(cout)

    def forward(self, x):
        return F.relu6(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(1, 144, 56, 56)]


def get_init_inputs():
    return [144, 144]
