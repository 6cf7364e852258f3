import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_dwsep_conv_block",
    "level": 2,
    "domains": ["mobile", "aiot", "robotics"],
    "description": "Depthwise-separable block: dw 3x3 + BN + ReLU, pw 1x1 + BN + ReLU (64 -> 128)",
    "source": "MobileNetV1 layer 3 at 112 input (28x28, 64 -> 128)",
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
        self.dw = nn.Conv2d(cin, cin, 3, 1, 1, groups=cin, bias=False)
        self.bn1 = _bn(cin)
        self.pw = nn.Conv2d(cin, cout, 1, bias=False)
        self.bn2 = _bn(cout)

    def forward(self, x):
        return F.relu(self.bn2(self.pw(F.relu(self.bn1(self.dw(x))))))


def get_inputs():
    return [torch.randn(1, 64, 28, 28)]


def get_init_inputs():
    return [64, 128]
