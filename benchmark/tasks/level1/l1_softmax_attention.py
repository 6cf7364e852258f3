import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_softmax_attention",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "Softmax over the last dim of 8 x 64 x 64 attention scores",
    "source": "Llama-style attention at d=512 (8 heads), 64-token prefill",
}


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(1, 8, 64, 64) * 4]


def get_init_inputs():
    return []
