import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_resnet_basic_block",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "ResNet-18",
    "description": "ResNet basic block, identity shortcut: conv3x3-BN-ReLU-conv3x3-BN + x, ReLU (128 ch)",
    "source": "ResNet-18 layer2.1 at a 112x112 input (14x14x128)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = _bn(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = _bn(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


def get_inputs():
    return [torch.randn(1, 128, 14, 14)]


def get_init_inputs():
    return [128]
