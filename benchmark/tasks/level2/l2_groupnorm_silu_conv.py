import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_groupnorm_silu_conv",
    "level": 2,
    "domains": ["robotics", "mobile"],
    "description": "Pre-activation ResBlock half: GroupNorm(32) + SiLU + conv 3x3",
    "source": "Diffusion / VAE decoder ResBlock at 32x32x64 (latent decoder on device)",
}


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm = nn.GroupNorm(32, c)
        self.norm.weight.data.uniform_(0.5, 1.5)
        self.norm.bias.data.uniform_(-0.2, 0.2)
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv(F.silu(self.norm(x)))


def get_inputs():
    return [torch.randn(1, 64, 32, 32)]


def get_init_inputs():
    return [64]
