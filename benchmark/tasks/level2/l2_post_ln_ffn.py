import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_post_ln_ffn",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "description": "Post-LN BERT FFN: Linear + GELU + Linear, residual add, LayerNorm",
    "source": "BERT-tiny / MobileBERT-style FFN (128 tokens, d 128 -> 512)",
}


class Model(nn.Module):
    def __init__(self, d, ff):
        super().__init__()
        self.fc1 = nn.Linear(d, ff)
        self.fc2 = nn.Linear(ff, d)
        self.norm = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x):
        return self.norm(x + self.fc2(F.gelu(self.fc1(x))))


def get_inputs():
    return [torch.randn(1, 128, 128)]


def get_init_inputs():
    return [128, 512]
