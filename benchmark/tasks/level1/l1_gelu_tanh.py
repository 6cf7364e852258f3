import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_gelu_tanh",
    "level": 1,
    "domains": ["mobile"],
    "description": "GELU, tanh approximation",
    "source": "GPT-2 / Phi-2 style MLP activation (64 x 2048)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.gelu(x, approximate="tanh")


def get_inputs():
    return [torch.randn(1, 64, 2048) * 2.0]


def get_init_inputs():
    return []
