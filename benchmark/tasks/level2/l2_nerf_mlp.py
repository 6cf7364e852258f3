import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_nerf_mlp",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "NeRF",
    "description": "Small NeRF MLP: positional encoding of 1024 samples (L 6), 4 layers of 128 with ReLU and a skip concat, density and RGB heads",
    "source": "NeRF (Mildenhall et al. 2020) at reduced width (128) and depth, 1024 ray samples, for on-robot scene models",
}


class Model(nn.Module):
    def __init__(self, n_freq, w):
        super().__init__()
        self.register_buffer("freqs", (2.0 ** torch.arange(n_freq)) * torch.pi)
        din = 3 + 6 * n_freq
        self.l1, self.l2 = nn.Linear(din, w), nn.Linear(w, w)
        self.l3, self.l4 = nn.Linear(w + din, w), nn.Linear(w, w)
        self.sigma = nn.Linear(w, 1)
        self.rgb = nn.Linear(w, 3)

    def forward(self, p):
        a = p.unsqueeze(-1) * self.freqs
        e = torch.cat([p, torch.sin(a).flatten(-2), torch.cos(a).flatten(-2)], dim=-1)
        h = F.relu(self.l2(F.relu(self.l1(e))))
        h = F.relu(self.l4(F.relu(self.l3(torch.cat([h, e], dim=-1)))))
        return F.relu(self.sigma(h)), torch.sigmoid(self.rgb(h))


def get_inputs():
    return [torch.rand(1024, 3) * 2 - 1]


def get_init_inputs():
    return [6, 128]
