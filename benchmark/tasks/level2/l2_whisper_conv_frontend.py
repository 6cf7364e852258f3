import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_whisper_conv_frontend",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "Whisper",
    "description": "Whisper encoder stem: conv1d 80->384 k3 + GELU, conv1d 384->384 k3 s2 + GELU, transpose, + sinusoidal positions",
    "source": "Whisper-tiny (Radford et al. 2022) encoder stem on a 0.5 s streaming chunk (80 x 50 log-mel -> 25 x 384)",
}


class Model(nn.Module):
    def __init__(self, n_mels, d, t):
        super().__init__()
        self.conv1 = nn.Conv1d(n_mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        inc = torch.exp(-torch.log(torch.tensor(10000.0)) / (d // 2 - 1) * torch.arange(d // 2))
        ang = torch.arange(t)[:, None] * inc[None, :]
        self.register_buffer("pos", torch.cat([ang.sin(), ang.cos()], dim=1))

    def forward(self, mel):
        x = F.gelu(self.conv2(F.gelu(self.conv1(mel))))
        return x.transpose(1, 2) + self.pos


def get_inputs():
    return [torch.randn(1, 80, 50)]


def get_init_inputs():
    return [80, 384, 25]
