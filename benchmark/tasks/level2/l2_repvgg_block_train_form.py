import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_repvgg_block_train_form",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "RepVGG",
    "description": "RepVGG block in its training form: 3x3 conv-BN + 1x1 conv-BN + identity BN, summed, ReLU",
    "source": "RepVGG-A0 (Ding et al. 2021) stage 2 block (96 channels) at 16x16, before re-parameterisation",
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
        self.k3 = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), _bn(c))
        self.k1 = nn.Sequential(nn.Conv2d(c, c, 1, bias=False), _bn(c))
        self.idn = _bn(c)

    def forward(self, x):
        return F.relu(self.k3(x) + self.k1(x) + self.idn(x))


def get_inputs():
    return [torch.randn(1, 96, 16, 16)]


def get_init_inputs():
    return [96]
