import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_elu",
    "level": 1,
    "domains": ["robotics"],
    "description": "ELU (alpha 1)",
    "source": "ENet-style / PilotNet driving CNN activations (31x98x24)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.elu(x)


def get_inputs():
    return [torch.randn(1, 24, 31, 98) * 2.0]


def get_init_inputs():
    return []
