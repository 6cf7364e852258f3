import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_einsum_attention_scores",
    "level": 1,
    "domains": ["mobile"],
    "description": "einsum('bhqd,bhkd->bhqk'): attention scores as an einsum",
    "source": "DeiT-tiny attention (3 heads, 65 tokens at 128x128 input, head dim 64)",
}


class Model(nn.Module):
    def forward(self, a, b):
        return torch.einsum("bhqd,bhkd->bhqk", a, b)


def get_inputs():
    return [torch.randn(1, 3, 65, 64), torch.randn(1, 3, 65, 64)]


def get_init_inputs():
    return []
