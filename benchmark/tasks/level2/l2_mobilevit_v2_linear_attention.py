import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_mobilevit_v2_linear_attention",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "MobileViTv2",
    "description": "MobileViTv2 separable self-attention: 1x1 conv to a context score, key and value; softmax over patches; context vector; ReLU(value) x context; 1x1 out",
    "source": "MobileViTv2-0.5 (Mehta & Rastegari 2022) attention on 64 channels, 2x2 patches of a 16x16 map (4 x 64 tokens)",
}


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.d = d
        self.qkv = nn.Conv2d(d, 1 + 2 * d, 1)
        self.out = nn.Conv2d(d, d, 1)

    def forward(self, x):
        q, k, v = torch.split(self.qkv(x), [1, self.d, self.d], dim=1)
        scores = torch.softmax(q, dim=-1)
        ctx = (k * scores).sum(-1, keepdim=True)
        return self.out(F.relu(v) * ctx)


def get_inputs():
    return [torch.randn(1, 64, 4, 64)]


def get_init_inputs():
    return [64]
