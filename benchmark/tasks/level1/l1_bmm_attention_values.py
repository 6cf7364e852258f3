import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_bmm_attention_values",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "Llama",
    "description": "Batched matmul of one decode token's attention weights [8, 1, 128] with the cached values [8, 128, 64]",
    "source": "Llama-style decoder (d_model 512, 8 heads of 64) decode step over a 128-entry KV cache: attn @ V",
}


class Model(nn.Module):
    def forward(self, p, v):
        return torch.bmm(p, v)


def get_inputs():
    return [torch.softmax(torch.randn(8, 1, 128), -1), torch.randn(8, 128, 64)]


def get_init_inputs():
    return []
