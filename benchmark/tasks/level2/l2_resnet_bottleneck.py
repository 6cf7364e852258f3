import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_resnet_bottleneck",
    "level": 2,
    "domains": ["robotics", "mobile"],
    "description": "ResNet bottleneck: 1x1 reduce, 3x3, 1x1 expand, each BN, identity residual, ReLU",
    "source": "ResNet-50 layer3 block at 224 input (14x14x256, width 64)",
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
    def __init__(self, c, w):
        super().__init__()
        self.c1 = nn.Conv2d(c, w, 1, bias=False)
        self.b1 = _bn(w)
        self.c2 = nn.Conv2d(w, w, 3, 1, 1, bias=False)
        self.b2 = _bn(w)
        self.c3 = nn.Conv2d(w, c, 1, bias=False)
        self.b3 = _bn(c)

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = F.relu(self.b2(self.c2(y)))
        return F.relu(x + self.b3(self.c3(y)))


def get_inputs():
    return [torch.randn(1, 256, 14, 14)]


def get_init_inputs():
    return [256, 64]
