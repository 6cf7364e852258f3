"""A tiny task for evaluator tests: y = relu(x) * w + x, output shaped like the input."""

import torch
import torch.nn as nn

META = {"id": "tiny_scale_residual", "level": 1, "domains": ["mobile"], "description": "relu(x) * w + x"}


class Model(nn.Module):
    def __init__(self, n: int = 64):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return torch.relu(x) * self.w + x


def get_inputs():
    return [torch.randn(4, 64)]


def get_init_inputs():
    return [64]
