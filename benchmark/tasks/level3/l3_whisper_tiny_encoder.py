import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_whisper_tiny_encoder",
    "level": 3,
    "domains": ["mobile", "aiot"],
    "family": "Whisper",
    "description": "Whisper-tiny audio encoder on a 0.5 s chunk: conv stem (80 -> 384, k3; 384 -> 384, k3 s2) with GELU, sinusoidal positions, 4 pre-LN layers (6 heads, MLP 1536), final LayerNorm",
    "source": "Whisper-tiny (Radford et al. 2022) encoder, 50 log-mel frames (25 tokens) of a streaming chunk instead of the padded 30 s window",
}


class EncoderLayer(nn.Module):
    """Pre-LN transformer encoder layer: LN, MHA, residual, LN, GELU MLP, residual."""

    def __init__(self, d, h, ff, eps):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4).unbind(0)
        a = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * (d // self.h) ** -0.5, dim=-1)
        x = x + self.proj(torch.matmul(a, v).transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Model(nn.Module):
    def __init__(self, n_mels, d, h, depth, t):
        super().__init__()
        self.conv1 = nn.Conv1d(n_mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        inc = torch.exp(-torch.log(torch.tensor(10000.0)) / (d // 2 - 1) * torch.arange(d // 2))
        ang = torch.arange(t)[:, None] * inc[None, :]
        self.register_buffer("pos", torch.cat([ang.sin(), ang.cos()], dim=1))
        self.layers = nn.Sequential(*[EncoderLayer(d, h, 4 * d, 1e-5) for _ in range(depth)])
        self.ln_post = nn.LayerNorm(d)

    def forward(self, mel):
        x = F.gelu(self.conv2(F.gelu(self.conv1(mel)))).transpose(1, 2) + self.pos
        return self.ln_post(self.layers(x))


def get_inputs():
    return [torch.randn(1, 80, 50)]


def get_init_inputs():
    return [80, 384, 6, 4, 25]
