import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_resnet_basic_block_down",
    "level": 2,
    "domains": ["mobile", "robotics"],
    "description": "ResNet basic block with stride-2 projection shortcut (64 -> 128)",
    "source": "ResNet-18 layer2 first block at 112x112 input (28x28x64 -> 14x14x128)",
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
        self.conv1 = nn.Conv2d(cin, cout, 3, 2, 1, bias=False)
        self.bn1 = _bn(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = _bn(cout)
        self.down = nn.Conv2d(cin, cout, 1, 2, bias=False)
        self.bn_d = _bn(cout)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + self.bn_d(self.down(x)))


def get_inputs():
    return [torch.randn(1, 64, 28, 28)]


def get_init_inputs():
    return [64, 128]
