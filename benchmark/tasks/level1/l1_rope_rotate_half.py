import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_rope_rotate_half",
    "level": 1,
    "domains": ["mobile", "robotics", "aiot"],
    "description": "Rotary position embedding, HF rotate_half form, on q [1, 8, 64, 64]",
    "source": "Llama / Qwen2 RoPE at head dim 64, 64-token prefill",
}


class Model(nn.Module):
    def __init__(self, hd, t, theta=10000.0):
        super().__init__()
        inv = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
        ang = torch.outer(torch.arange(t, dtype=torch.float32), inv)
        emb = torch.cat([ang, ang], -1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())

    def forward(self, x):
        h = x.shape[-1] // 2
        rot = torch.cat([-x[..., h:], x[..., :h]], -1)
        return x * self.cos + rot * self.sin


def get_inputs():
    return [torch.randn(1, 8, 64, 64)]


def get_init_inputs():
    return [64, 64]
