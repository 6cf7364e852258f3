import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_masked_fill_causal",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "family": "Llama",
    "description": "Causal mask as a finite -1e9 fill over 8 heads x 64 x 64 scores",
    "source": "Llama-style decoder prefill of 64 tokens (8 heads): scores.masked_fill(~causal, -1e9)",
}


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("keep", torch.tril(torch.ones(n, n, dtype=torch.bool)))

    def forward(self, s):
        return s.masked_fill(~self.keep, -1e9)


def get_inputs():
    return [torch.randn(1, 8, 64, 64)]


def get_init_inputs():
    return [64]
