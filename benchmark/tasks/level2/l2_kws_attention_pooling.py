import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_kws_attention_pooling",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "KWS",
    "description": "Attention pooling over frames: tanh(W h), softmax over 49 frames of a learned score, weighted sum, linear to 12 keywords",
    "source": "Attention-based keyword spotting (Shan et al. 2018 / de Andrade et al. 2018) over 49 frames of a 128-d encoder output",
}


class Model(nn.Module):
    def __init__(self, d, a, nc):
        super().__init__()
        self.w = nn.Linear(d, a)
        self.v = nn.Linear(a, 1, bias=False)
        self.out = nn.Linear(d, nc)

    def forward(self, h):
        s = torch.softmax(self.v(torch.tanh(self.w(h))), dim=1)
        return self.out((s * h).sum(1))


def get_inputs():
    return [torch.randn(1, 49, 128)]


def get_init_inputs():
    return [128, 64, 12]
