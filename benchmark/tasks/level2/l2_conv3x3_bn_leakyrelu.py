import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_conv3x3_bn_leakyrelu",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "description": "Conv 3x3 + BatchNorm + LeakyReLU(0.1) (32 -> 64)",
    "source": "YOLOv3-tiny / Darknet layer at 208x208 input (52x52x32)",
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
        self.conv = nn.Conv2d(cin, cout, 3, 1, 1, groups=1, bias=False)
        self.bn = _bn(cout)

    def forward(self, x):
        return F.leaky_relu(self.bn(self.conv(x)), 0.1)


def get_inputs():
    return [torch.randn(1, 32, 52, 52)]


def get_init_inputs():
    return [32, 64]
