import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_vit_cls_token_posembed",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "DeiT",
    "description": "ViT input assembly: class token prepended to 49 patch tokens, learned position embedding added, pre-LayerNorm of the first block",
    "source": "DeiT-Tiny (Touvron et al. 2021) at 112x112 (7x7 patches of 16, d 192)",
}


class Model(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, d) * 0.02)
        self.ln = nn.LayerNorm(d, eps=1e-6)

    def forward(self, x):
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return x, self.ln(x)


def get_inputs():
    return [torch.randn(1, 49, 192)]


def get_init_inputs():
    return [49, 192]
