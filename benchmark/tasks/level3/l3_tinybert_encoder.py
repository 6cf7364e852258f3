import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_tinybert_encoder",
    "level": 3,
    "domains": ["mobile", "aiot"],
    "family": "TinyBERT",
    "description": "TinyBERT-4 encoder: token + position + segment embeddings with LayerNorm, 4 post-LN layers (d 312, 12 heads, FFN 1200) with a padding mask, pooler (tanh)",
    "source": "TinyBERT-4 General (Jiao et al. 2020), 64 tokens with 48 valid, 30522-token vocabulary cut to 8000 to keep the embedding under the size cap",
}


class Layer(nn.Module):
    def __init__(self, d, h, ff):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x, bias):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4).unbind(0)
        s = torch.matmul(q, k.transpose(-1, -2)) / (d // self.h) ** 0.5 + bias
        y = torch.matmul(torch.softmax(s, -1), v).transpose(1, 2).reshape(b, t, d)
        x = self.ln1(x + self.o(y))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class Model(nn.Module):
    def __init__(self, vocab, d, h, ff, depth, t):
        super().__init__()
        self.tok, self.pos, self.seg = nn.Embedding(vocab, d), nn.Embedding(t, d), nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(Layer(d, h, ff) for _ in range(depth))
        self.pool = nn.Linear(d, d)
        self.register_buffer("positions", torch.arange(t)[None])

    def forward(self, ids, segments, valid):
        x = self.ln(self.tok(ids) + self.pos(self.positions) + self.seg(segments))
        bias = (1.0 - valid[:, None, None, :]) * -1e9
        for layer in self.layers:
            x = layer(x, bias)
        return x, torch.tanh(self.pool(x[:, 0]))


def get_inputs():
    return [torch.randint(0, 8000, (1, 64)), torch.cat([torch.zeros(1, 24, dtype=torch.long), torch.ones(1, 40, dtype=torch.long)], 1), torch.cat([torch.ones(1, 48), torch.zeros(1, 16)], 1)]


def get_init_inputs():
    return [8000, 312, 12, 1200, 4, 64]
