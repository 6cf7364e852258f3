import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_mobilevit_unfold_attention",
    "level": 2,
    "domains": ["mobile"],
    "description": "MobileViT block core: unfold 2x2 patches into sequences, pre-LN attention (1 head) + FFN over each pixel position, fold back",
    "source": "MobileViT-XXS layer 3 (28x28x64 -> d 64, 4 sequences of 196 tokens)",
}


class Model(nn.Module):
    def __init__(self, d, ff):
        super().__init__()
        self.n1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d)
        self.n2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ff)
        self.fc2 = nn.Linear(ff, d)

    def forward(self, x):
        b, d, h, w = x.shape
        # [B, d, H, W] -> [B * 4, HW/4, d]: one sequence per position inside a 2x2 patch
        y = x.reshape(b, d, h // 2, 2, w // 2, 2).permute(0, 3, 5, 2, 4, 1).reshape(b * 4, (h // 2) * (w // 2), d)
        q, k, v = self.qkv(self.n1(y)).chunk(3, -1)
        y = y + self.o(torch.softmax(q @ k.transpose(-2, -1) * d ** -0.5, -1) @ v)
        y = y + self.fc2(F.silu(self.fc1(self.n2(y))))
        return y.reshape(b, 2, 2, h // 2, w // 2, d).permute(0, 5, 3, 1, 4, 2).reshape(b, d, h, w)


def get_inputs():
    return [torch.randn(1, 64, 28, 28)]


def get_init_inputs():
    return [64, 128]
