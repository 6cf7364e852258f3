import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_bert_attention_post_ln",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "TinyBERT",
    "description": "BERT self-attention with a padding mask (finite -1e9), 12 heads of 26, output dense, residual, post-LayerNorm",
    "source": "TinyBERT-4 (Jiao et al. 2020) layer, hidden 312, 12 heads, 32 tokens with 24 valid",
}


class Model(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, valid):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4).unbind(0)
        s = torch.matmul(q, k.transpose(-1, -2)) / (d // self.h) ** 0.5
        s = s + (1.0 - valid[:, None, None, :]) * -1e9
        y = torch.matmul(torch.softmax(s, -1), v).transpose(1, 2).reshape(b, t, d)
        return self.ln(x + self.o(y))


def get_inputs():
    return [torch.randn(1, 32, 312), torch.cat([torch.ones(1, 24), torch.zeros(1, 8)], 1)]


def get_init_inputs():
    return [312, 12]
