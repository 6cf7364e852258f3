import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_layernorm",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "LayerNorm over 192 features of 197 tokens (affine)",
    "source": "DeiT-tiny block norm (197 x 192)",
}


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        # non-trivial affine parameters
        self.norm.weight.data.uniform_(0.5, 1.5)
        self.norm.bias.data.uniform_(-0.2, 0.2)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(1, 197, 192)]


def get_init_inputs():
    return [192]
