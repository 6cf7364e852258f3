import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_patch_embed_vit",
    "level": 2,
    "domains": ["mobile"],
    "description": "ViT patch embedding: 16x16/16 conv, flatten, transpose, prepend class token, add position embedding",
    "source": "DeiT-tiny at 128x128 input (64 patches + cls, d 192)",
}


class Model(nn.Module):
    def __init__(self, d, patch, n):
        super().__init__()
        self.proj = nn.Conv2d(3, d, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, d) * 0.02)

    def forward(self, x):
        x = self.proj(x).flatten(2).transpose(1, 2)
        return torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos


def get_inputs():
    return [torch.randn(1, 3, 128, 128)]


def get_init_inputs():
    return [192, 16, 64]
