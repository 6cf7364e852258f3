import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_timestep_embedding_mlp",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "Diffusion Policy",
    "description": "Diffusion timestep embedding: sinusoidal features of the step (dim 128), linear 128 -> 512, Mish, linear 512 -> 128",
    "source": "Diffusion Policy (Chi et al. 2023) conditional U-Net diffusion-step encoder",
}


class Model(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        half = d // 2
        self.register_buffer("freqs", torch.exp(-torch.log(torch.tensor(10000.0)) * torch.arange(half) / (half - 1)))
        self.fc1, self.fc2 = nn.Linear(d, h), nn.Linear(h, d)

    def forward(self, t):
        a = t[:, None] * self.freqs[None]
        e = torch.cat([a.sin(), a.cos()], dim=-1)
        return self.fc2(F.mish(self.fc1(e)))


def get_inputs():
    return [torch.rand(1) * 100]


def get_init_inputs():
    return [128, 512]
