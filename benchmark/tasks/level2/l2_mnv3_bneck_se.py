import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_mnv3_bneck_se",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "description": "MobileNetV3 bneck: expand 1x1 + dw 5x5 + SE (ReLU / hardsigmoid) + project, all hardswish, residual",
    "source": "MobileNetV3-Small bneck 5 at 224 input (14x14x40, expand 240)",
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
    def __init__(self, c, hid, sq):
        super().__init__()
        self.expand = nn.Conv2d(c, hid, 1, bias=False)
        self.bn1 = _bn(hid)
        self.dw = nn.Conv2d(hid, hid, 5, 1, 2, groups=hid, bias=False)
        self.bn2 = _bn(hid)
        self.fc1 = nn.Conv2d(hid, sq, 1)
        self.fc2 = nn.Conv2d(sq, hid, 1)
        self.project = nn.Conv2d(hid, c, 1, bias=False)
        self.bn3 = _bn(c)

    def forward(self, x):
        y = F.hardswish(self.bn1(self.expand(x)))
        y = F.hardswish(self.bn2(self.dw(y)))
        y = y * F.hardsigmoid(self.fc2(F.relu(self.fc1(F.adaptive_avg_pool2d(y, 1)))))
        return x + self.bn3(self.project(y))


def get_inputs():
    return [torch.randn(1, 40, 14, 14)]


def get_init_inputs():
    return [40, 240, 64]
