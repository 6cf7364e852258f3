import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_diffusion_policy_unet1d",
    "level": 3,
    "domains": ["robotics"],
    "family": "Diffusion Policy",
    "description": "Diffusion Policy conditional 1-D U-Net, one denoising step: timestep encoder, FiLM-conditioned residual blocks down (64/128) and up, over a 16-step action horizon",
    "source": "Diffusion Policy (Chi et al. 2023) ConditionalUnet1D scaled to down dims (64, 128), 2-D actions, horizon 16, observation condition 64",
}


class ResBlock(nn.Module):
    def __init__(self, cin, c, dcond):
        super().__init__()
        self.c1 = nn.Sequential(nn.Conv1d(cin, c, 5, padding=2), nn.GroupNorm(8, c), nn.Mish())
        self.c2 = nn.Sequential(nn.Conv1d(c, c, 5, padding=2), nn.GroupNorm(8, c), nn.Mish())
        self.film = nn.Sequential(nn.Mish(), nn.Linear(dcond, 2 * c))
        self.res = nn.Conv1d(cin, c, 1) if cin != c else nn.Identity()

    def forward(self, x, cond):
        scale, bias = self.film(cond).unsqueeze(-1).chunk(2, dim=1)
        return self.c2(scale * self.c1(x) + bias) + self.res(x)


class Model(nn.Module):
    def __init__(self, act, obs, dt):
        super().__init__()
        half = dt // 2
        self.register_buffer("freqs", torch.exp(-torch.log(torch.tensor(10000.0)) * torch.arange(half) / (half - 1)))
        self.t_mlp = nn.Sequential(nn.Linear(dt, 4 * dt), nn.Mish(), nn.Linear(4 * dt, dt))
        dc = dt + obs
        self.d1, self.d1b = ResBlock(act, 64, dc), ResBlock(64, 64, dc)
        self.down1 = nn.Conv1d(64, 64, 3, 2, 1)
        self.d2, self.d2b = ResBlock(64, 128, dc), ResBlock(128, 128, dc)
        self.mid = ResBlock(128, 128, dc)
        self.u1, self.u1b = ResBlock(256, 64, dc), ResBlock(64, 64, dc)
        self.up1 = nn.ConvTranspose1d(64, 64, 4, 2, 1)
        self.u2 = ResBlock(128, 64, dc)
        self.out = nn.Sequential(nn.Conv1d(64, 64, 5, padding=2), nn.GroupNorm(8, 64), nn.Mish(), nn.Conv1d(64, act, 1))

    def forward(self, sample, t, obs):
        a = t[:, None] * self.freqs[None]
        cond = torch.cat([self.t_mlp(torch.cat([a.sin(), a.cos()], -1)), obs], dim=-1)
        x = sample.transpose(1, 2)
        h1 = self.d1b(self.d1(x, cond), cond)
        h2 = self.d2b(self.d2(self.down1(h1), cond), cond)
        m = self.mid(h2, cond)
        y = self.up1(self.u1b(self.u1(torch.cat([m, h2], 1), cond), cond))
        y = self.u2(torch.cat([y, h1], 1), cond)
        return self.out(y).transpose(1, 2)


def get_inputs():
    return [torch.randn(1, 16, 2), torch.tensor([37.0]), torch.randn(1, 64)]


def get_init_inputs():
    return [2, 64, 64]
