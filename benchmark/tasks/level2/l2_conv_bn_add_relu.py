import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_conv_bn_add_relu",
    "level": 2,
    "domains": ["mobile", "robotics"],
    "description": "Conv 3x3 + BatchNorm + residual add + ReLU (ResNet basic-block tail)",
    "source": "ResNet-18 layer2 second conv at 112x112 input (14x14x128)",
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
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, 1, 1, bias=False)
        self.bn = _bn(c)

    def forward(self, x, identity):
        return F.relu(self.bn(self.conv(x)) + identity)


def get_inputs():
    return [torch.randn(1, 128, 14, 14), torch.randn(1, 128, 14, 14)]


def get_init_inputs():
    return [128]
