import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_deit_tiny",
    "level": 3,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "DeiT",
    "description": "DeiT-Tiny / ViT-Ti (1000 classes) at 112x112: 16x16 patch embedding, class token, 12 pre-LN encoder layers (d 192, 3 heads, MLP 768), head",
    "source": "DeiT-Tiny (Touvron et al. 2021), reduced 112x112 input (49 patches + class token)",
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
    def __init__(self, d, depth, h, num_classes):
        super().__init__()
        self.patch = nn.Conv2d(3, d, 16, 16)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, 50, d) * 0.02)
        self.layers = nn.Sequential(*[EncoderLayer(d, h, 4 * d, 1e-6) for _ in range(depth)])
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.head = nn.Linear(d, num_classes)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.layers(x))[:, 0])


def get_inputs():
    return [torch.randn(1, 3, 112, 112)]


def get_init_inputs():
    return [192, 12, 3, 1000]
