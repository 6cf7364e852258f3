import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_sinusoidal_posenc",
    "level": 1,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "NeRF",
    "description": "Sinusoidal encoding of 1024 3-D points at 10 frequencies (sin and cos of 2^k pi p)",
    "source": "NeRF (Mildenhall et al. 2020) positional encoding, L = 10, 1024 samples",
}


class Model(nn.Module):
    def __init__(self, n_freq):
        super().__init__()
        self.register_buffer("freqs", (2.0 ** torch.arange(n_freq)) * torch.pi)

    def forward(self, p):
        a = p.unsqueeze(-1) * self.freqs
        return torch.cat([torch.sin(a), torch.cos(a)], dim=-1).flatten(-2)


def get_inputs():
    return [torch.rand(1, 1024, 3) * 2 - 1]


def get_init_inputs():
    return [10]
