import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_rope_interleaved",
    "level": 1,
    "domains": ["mobile"],
    "description": "Rotary position embedding, interleaved (even/odd pair) form, on [1, 64, 8, 64]",
    "source": "Llama reference / GPT-J interleaved RoPE at head dim 64, 64 tokens",
}


class Model(nn.Module):
    def __init__(self, hd, t, theta=10000.0):
        super().__init__()
        inv = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
        ang = torch.outer(torch.arange(t, dtype=torch.float32), inv)  # [T, hd/2]
        self.register_buffer("cos", ang.cos()[:, None, :])
        self.register_buffer("sin", ang.sin()[:, None, :])

    def forward(self, x):
        b, t, h, d = x.shape
        xr = x.reshape(b, t, h, d // 2, 2)
        x0, x1 = xr[..., 0], xr[..., 1]
        o0 = x0 * self.cos - x1 * self.sin
        o1 = x0 * self.sin + x1 * self.cos
        return torch.stack([o0, o1], -1).reshape(b, t, h, d)


def get_inputs():
    return [torch.randn(1, 64, 8, 64)]


def get_init_inputs():
    return [64, 64]
