import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_instancenorm_conv_relu",
    "level": 2,
    "domains": ["mobile"],
    "description": "Conv 3x3 + InstanceNorm (affine) + ReLU",
    "source": "Fast neural style transfer residual block (64x64x64)",
}


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.norm = nn.InstanceNorm2d(c, affine=True)
        self.norm.weight.data.uniform_(0.5, 1.5)
        self.norm.bias.data.uniform_(-0.2, 0.2)

    def forward(self, x):
        return F.relu(self.norm(self.conv(x)))


def get_inputs():
    return [torch.randn(1, 64, 48, 48)]


def get_init_inputs():
    return [64]
