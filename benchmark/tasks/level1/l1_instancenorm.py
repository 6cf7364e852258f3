import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_instancenorm",
    "level": 1,
    "domains": ["mobile"],
    "description": "InstanceNorm2d with affine, 64 channels",
    "source": "Fast style transfer residual block (64x64x64)",
}


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.InstanceNorm2d(d, affine=True)
        # non-trivial affine parameters
        self.norm.weight.data.uniform_(0.5, 1.5)
        self.norm.bias.data.uniform_(-0.2, 0.2)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(1, 64, 64, 64)]


def get_init_inputs():
    return [64]
