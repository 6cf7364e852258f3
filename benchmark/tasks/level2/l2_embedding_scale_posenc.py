import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_embedding_scale_posenc",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "Transformer",
    "description": "Token embedding lookup scaled by sqrt(d) plus sinusoidal position encoding (d 256, vocab 4000, 64 tokens)",
    "source": "Transformer (Vaswani et al. 2017) input layer as in on-device translation / ASR decoders (vocab 4000, d 256)",
}


class Model(nn.Module):
    def __init__(self, vocab, d, t):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.d = d
        pos = torch.arange(t)[:, None]
        div = torch.exp(torch.arange(0, d, 2) * (-torch.log(torch.tensor(10000.0)) / d))
        pe = torch.zeros(t, d)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, ids):
        return self.emb(ids) * self.d ** 0.5 + self.pe


def get_inputs():
    return [torch.randint(0, 4000, (1, 64))]


def get_init_inputs():
    return [4000, 256, 64]
