import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_bmm_attention_values",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "Llama",
    "description": "Batched matmul of attention weights [8, 64, 64] with values [8, 64, 64]",
    "source": "Llama-style decoder (d_model 512, 8 heads of 64) prefill of 64 tokens: attn @ V",
}


class Model(nn.Module):
    def forward(self, p, v):
        return torch.bmm(p, v)


def get_inputs():
    return [torch.softmax(torch.randn(8, 64, 64), -1), torch.randn(8, 64, 64)]


def get_init_inputs():
    return []
