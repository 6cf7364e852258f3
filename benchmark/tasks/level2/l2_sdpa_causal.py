import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_sdpa_causal",
    "level": 2,
    "domains": ["mobile", "robotics"],
    "description": "F.scaled_dot_product_attention with is_causal=True on [1, 8, 64, 64] q/k/v",
    "source": "Llama-style attention core at d=512 (8 heads of 64), 64-token prefill",
}


class Model(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_inputs():
    return [torch.randn(1, 8, 64, 64), torch.randn(1, 8, 64, 64), torch.randn(1, 8, 64, 64)]


def get_init_inputs():
    return []
