import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_groupnorm",
    "level": 1,
    "domains": ["robotics", "mobile"],
    "description": "GroupNorm, 32 groups over 128 channels (affine)",
    "source": "FCOS head tower GroupNorm (28x28x128)",
}


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.GroupNorm(32, d)
        # non-trivial affine parameters
        self.norm.weight.data.uniform_(0.5, 1.5)
        self.norm.bias.data.uniform_(-0.2, 0.2)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(1, 128, 28, 28)]


def get_init_inputs():
    return [128]
