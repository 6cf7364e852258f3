import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_matmul_transposed_b",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "description": "Batched Q @ K^T (transposed second operand), 4 heads, 128 tokens, head dim 32",
    "source": "MobileViT-S / EfficientFormer attention scores (4 heads x 128 tokens x 32)",
}


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b.transpose(-2, -1)


def get_inputs():
    return [torch.randn(4, 128, 32), torch.randn(4, 128, 32)]


def get_init_inputs():
    return []
