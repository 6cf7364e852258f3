import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_embedding",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "description": "Token embedding lookup: 64 ids into an 8000 x 512 table",
    "source": "Small on-device LM input embedding (vocab 8000, d_model 512)",
}


class Model(nn.Module):
    def __init__(self, vocab, d):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)

    def forward(self, ids):
        return self.emb(ids)


def get_inputs():
    return [torch.randint(0, 8000, (1, 64))]


def get_init_inputs():
    return [8000, 512]
