import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_split_heads",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "Split heads: [B, T, D] -> [B, H, T, D/H] (view + transpose)",
    "source": "Llama-style attention at d=512, 8 heads, 64 tokens",
}


class Model(nn.Module):
    def forward(self, x):
        return x.view(1, 64, 8, 64).transpose(1, 2).contiguous()


def get_inputs():
    return [torch.randn(1, 64, 512)]


def get_init_inputs():
    return []
