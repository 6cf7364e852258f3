import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_gru_sequence",
    "level": 2,
    "domains": ["aiot"],
    "description": "GRU over 16 time steps, unrolled: reset/update gates, candidate state",
    "source": "Keyword-spotting GRU (input 40 MFCC, hidden 128), 16 frames",
}


class Model(nn.Module):
    def __init__(self, din, h):
        super().__init__()
        self.ih = nn.Linear(din, 3 * h)
        self.hh = nn.Linear(h, 3 * h)

    def forward(self, xs, h):
        gi_all = self.ih(xs)  # [B, T, 3H], input gates for every step at once
        for t in range(xs.shape[1]):
            r_i, z_i, n_i = gi_all[:, t].chunk(3, -1)
            r_h, z_h, n_h = self.hh(h).chunk(3, -1)
            r, z = torch.sigmoid(r_i + r_h), torch.sigmoid(z_i + z_h)
            h = (1 - z) * torch.tanh(n_i + r * n_h) + z * h
        return h


def get_inputs():
    return [torch.randn(1, 16, 40), torch.randn(1, 128)]


def get_init_inputs():
    return [40, 128]
