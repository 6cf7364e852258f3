import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_embedding_rmsnorm",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "description": "Token embedding lookup + RMSNorm (LLM input layer)",
    "source": "Small on-device LM (vocab 8000, d_model 512), 64 tokens",
}


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class Model(nn.Module):
    def __init__(self, vocab, d):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.norm = RMSNorm(d)

    def forward(self, ids):
        return self.norm(self.emb(ids))


def get_inputs():
    return [torch.randint(0, 8000, (1, 64))]


def get_init_inputs():
    return [8000, 512]
