import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_linear_lm_head_decode",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "family": "TinyLlama",
    "description": "Linear 512 -> 8000 (no bias) for one token: the LM head of a decode step",
    "source": "Small on-device LM head (d_model 512, 8000-token SentencePiece vocabulary), one decode step",
}


class Model(nn.Module):
    def __init__(self, d, v):
        super().__init__()
        self.head = nn.Linear(d, v, bias=False)

    def forward(self, x):
        return self.head(x)


def get_inputs():
    return [torch.randn(1, 1, 512)]


def get_init_inputs():
    return [512, 8000]
