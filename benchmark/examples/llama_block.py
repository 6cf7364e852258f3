"""Embedded example task: a Llama-style decoder block (RMSNorm, causal MHA, SwiGLU MLP), prefill of
64 tokens at d_model 256."""

import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "example_llama_block",
    "level": 3,
    "domains": ["robotics", "mobile"],
    "dtype": "float32",
    "tolerance": {"atol": 1e-3, "rtol": 1e-3},  # softmax over 64 keys + two 688-wide reductions
    "description": "Llama decoder block prefill: d=256, 4 heads, ffn 688, T=64, finite causal mask",
    "source": "Llama architecture, scaled to an edge-sized model",
}


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d) + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


class Model(nn.Module):
    def __init__(self, d: int = 256, nh: int = 4, ff: int = 688):
        super().__init__()
        self.nh, self.hd = nh, d // nh
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.gate = nn.Linear(d, ff, bias=False)
        self.up = nn.Linear(d, ff, bias=False)
        self.down = nn.Linear(ff, d, bias=False)

    def forward(self, x):
        B, T, D = x.shape
        h = self.n1(x)
        q = self.q(h).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k(h).view(B, T, self.nh, self.hd).transpose(1, 2)
        v = self.v(h).view(B, T, self.nh, self.hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / (self.hd**0.5)
        mask = torch.triu(torch.full((T, T), -1e9), 1)  # -inf breaks TVM 0.27's LegalizeOps
        att = torch.softmax(att + mask, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.o(y)
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def get_inputs():
    return [torch.randn(1, 64, 256)]


def get_init_inputs():
    return [256, 4, 688]
