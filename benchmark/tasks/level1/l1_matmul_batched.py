import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_matmul_batched",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "Batched matmul: 8 heads x (64x64 @ 64x64), attention probabilities times V",
    "source": "Llama-style attention at d=512 (8 heads of 64), 64 tokens",
}


class Model(nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    return [torch.softmax(torch.randn(8, 64, 64), -1), torch.randn(8, 64, 64)]


def get_init_inputs():
    return []
