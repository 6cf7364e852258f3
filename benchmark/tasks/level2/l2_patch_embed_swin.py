import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_patch_embed_swin",
    "level": 2,
    "domains": ["mobile", "robotics"],
    "description": "Swin patch embedding: 4x4/4 conv, flatten to tokens, LayerNorm",
    "source": "Swin-T patch partition at 112x112 input (28x28 tokens, d 96)",
}


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Conv2d(3, d, 4, 4)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(self.proj(x).flatten(2).transpose(1, 2))


def get_inputs():
    return [torch.randn(1, 3, 112, 112)]


def get_init_inputs():
    return [96]
