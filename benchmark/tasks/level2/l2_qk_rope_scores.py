import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_qk_rope_scores",
    "level": 2,
    "domains": ["mobile", "robotics"],
    "description": "q/k projection + RoPE + scaled QK^T (attention logits with rotary positions)",
    "source": "Llama-style attention at d_model 256 (4 heads of 64), 64 tokens",
}


class Model(nn.Module):
    def __init__(self, d, nh, t, theta=10000.0):
        super().__init__()
        self.nh, self.hd = nh, d // nh
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        inv = 1.0 / theta ** (torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd)
        emb = torch.outer(torch.arange(t, dtype=torch.float32), inv).repeat(1, 2)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())

    def rope(self, x):
        h = self.hd // 2
        return x * self.cos + torch.cat([-x[..., h:], x[..., :h]], -1) * self.sin

    def forward(self, x):
        b, t, d = x.shape
        q = self.rope(self.q(x).view(b, t, self.nh, self.hd).transpose(1, 2))
        k = self.rope(self.k(x).view(b, t, self.nh, self.hd).transpose(1, 2))
        return q @ k.transpose(-2, -1) * self.hd ** -0.5


def get_inputs():
    return [torch.randn(1, 64, 256)]


def get_init_inputs():
    return [256, 4, 64]
