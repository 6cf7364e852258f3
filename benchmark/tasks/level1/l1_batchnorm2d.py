import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_batchnorm2d",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "description": "BatchNorm2d in eval mode (running statistics), 96 channels",
    "source": "MobileNetV2 block BN (28x28x96), unfused",
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
        self.bn = _bn(c)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(1, 96, 28, 28)]


def get_init_inputs():
    return [96]
