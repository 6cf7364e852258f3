import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_inverted_residual_s2",
    "level": 2,
    "domains": ["mobile", "aiot", "robotics"],
    "description": "MobileNetV2 inverted residual, stride 2, expansion 6 (no residual)",
    "source": "MobileNetV2 block 7 (28x28x32 -> 192 -> 64, 14x14)",
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
    def __init__(self, cin, cout, stride, t):
        super().__init__()
        hid = cin * t
        self.use_res = stride == 1 and cin == cout
        self.pw = nn.Conv2d(cin, hid, 1, bias=False)
        self.bn1 = _bn(hid)
        self.dw = nn.Conv2d(hid, hid, 3, stride, 1, groups=hid, bias=False)
        self.bn2 = _bn(hid)
        self.pwl = nn.Conv2d(hid, cout, 1, bias=False)
        self.bn3 = _bn(cout)

    def forward(self, x):
        y = F.relu6(self.bn1(self.pw(x)))
        y = F.relu6(self.bn2(self.dw(y)))
        y = self.bn3(self.pwl(y))
        return x + y if self.use_res else y


def get_inputs():
    return [torch.randn(1, 32, 28, 28)]


def get_init_inputs():
    return [32, 64, 2, 6]
