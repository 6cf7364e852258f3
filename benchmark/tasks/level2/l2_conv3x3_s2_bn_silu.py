import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_conv3x3_s2_bn_silu",
    "level": 2,
    "domains": ["robotics", "mobile"],
    "description": "Strided conv 3x3/2 + BatchNorm + SiLU (32 -> 64)",
    "source": "YOLOv8n backbone downsample at 320x320 (80x80x32 -> 40x40)",
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
        self.bn = _bn(cout, 1e-3)

    def forward(self, x):
        return F.silu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(1, 32, 80, 80)]


def get_init_inputs():
    return [32, 64]
