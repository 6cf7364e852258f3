import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_mqa_causal_attention",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "Gemma",
    "description": "Multi-query causal attention: 6 query heads share one key/value head of 64, finite -1e9 mask, softmax, output projection",
    "source": "Gemma-2B-style multi-query attention (Gemma team 2024), scaled to d_model 384, 6 heads of 64, 32-token prefill",
}


class Model(nn.Module):
    def __init__(self, d, h, hd):
        super().__init__()
        self.h, self.hd = h, hd
        self.q = nn.Linear(d, h * hd, bias=False)
        self.kv = nn.Linear(d, 2 * hd, bias=False)
        self.o = nn.Linear(h * hd, d, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.h, self.hd).transpose(1, 2)
        k, v = self.kv(x).view(b, t, 2, 1, self.hd).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        s = torch.matmul(q, k.transpose(-1, -2)) / self.hd ** 0.5
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
        p = torch.softmax(s.masked_fill(mask, -1e9), -1)
        return self.o(torch.matmul(p, v).transpose(1, 2).reshape(b, t, -1))


def get_inputs():
    return [torch.randn(1, 32, 384)]


def get_init_inputs():
    return [384, 6, 64]
