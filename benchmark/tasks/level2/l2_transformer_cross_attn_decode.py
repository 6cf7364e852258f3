import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_transformer_cross_attn_decode",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "Whisper",
    "description": "Decoder cross-attention for one token: query projection, attention over 75 precomputed encoder keys / values (6 heads of 64), output projection, residual, LayerNorm",
    "source": "Whisper-tiny (Radford et al. 2022) decoder cross-attention during decoding, 1.5 s of audio (75 encoder frames)",
}


class Model(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.q = nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.ln = nn.LayerNorm(d)

    def forward(self, x, k, v):
        b, t, d = x.shape
        q = self.q(self.ln(x)).view(b, t, self.h, d // self.h).transpose(1, 2)
        a = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * (d // self.h) ** -0.5, dim=-1)
        return x + self.o(torch.matmul(a, v).transpose(1, 2).reshape(b, t, d))


def get_inputs():
    return [torch.randn(1, 1, 384), torch.randn(1, 6, 75, 64), torch.randn(1, 6, 75, 64)]


def get_init_inputs():
    return [384, 6]
