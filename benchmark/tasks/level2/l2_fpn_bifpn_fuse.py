import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_fpn_bifpn_fuse",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "EfficientDet",
    "description": "BiFPN fast normalised fusion node: ReLU weights normalised by their sum, weighted sum of three resized inputs, swish, depthwise-separable conv-BN",
    "source": "EfficientDet-D0 (Tan et al. 2020) BiFPN P4 output node (64 channels) at a 256x256 input (16x16)",
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
        self.w = nn.Parameter(torch.rand(3) + 0.5)
        self.dw = nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False)
        self.pw = nn.Conv2d(c, c, 1)
        self.bn = _bn(c)

    def forward(self, p4_in, p4_td, p3_out):
        w = F.relu(self.w)
        w = w / (w.sum() + 1e-4)
        x = w[0] * p4_in + w[1] * p4_td + w[2] * F.max_pool2d(p3_out, 3, 2, 1)
        return self.bn(self.pw(self.dw(F.silu(x))))


def get_inputs():
    return [torch.randn(1, 64, 16, 16), torch.randn(1, 64, 16, 16), torch.randn(1, 64, 32, 32)]


def get_init_inputs():
    return [64]
