import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_film_cond_resblock1d",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "Diffusion Policy",
    "description": "Conditional 1-D residual block: conv1d k5-GroupNorm-Mish, FiLM (scale, bias) from the condition, conv1d k5-GroupNorm-Mish, 1x1 residual",
    "source": "Diffusion Policy (Chi et al. 2023) ConditionalResidualBlock1D, 16-step action horizon, 64 -> 128 channels, condition 256",
}


class Model(nn.Module):
    def __init__(self, cin, c, dcond):
        super().__init__()
        self.c1 = nn.Sequential(nn.Conv1d(cin, c, 5, padding=2), nn.GroupNorm(8, c), nn.Mish())
        self.c2 = nn.Sequential(nn.Conv1d(c, c, 5, padding=2), nn.GroupNorm(8, c), nn.Mish())
        self.film = nn.Sequential(nn.Mish(), nn.Linear(dcond, 2 * c))
        self.res = nn.Conv1d(cin, c, 1)

    def forward(self, x, cond):
        y = self.c1(x)
        scale, bias = self.film(cond).unsqueeze(-1).chunk(2, dim=1)
        return self.c2(scale * y + bias) + self.res(x)


def get_inputs():
    return [torch.randn(1, 64, 16), torch.randn(1, 256)]


def get_init_inputs():
    return [64, 128, 256]
