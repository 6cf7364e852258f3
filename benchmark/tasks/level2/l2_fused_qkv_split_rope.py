import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_fused_qkv_split_rope",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "Phi-3",
    "description": "Fused qkv projection 384 -> 1152, split into 6 heads of q / k / v, RoPE on q and k at positions 0..15",
    "source": "Phi-3-mini qkv_proj (Abdin et al. 2024) scaled to d_model 384, 6 heads of 64, a 16-token prefill chunk",
}


def _rope(x, pos, theta=10000.0):
    d = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    ang = pos[:, None].float() * inv[None, :]
    cos, sin = torch.cat([ang.cos(), ang.cos()], -1), torch.cat([ang.sin(), ang.sin()], -1)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class Model(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d, bias=False)

    def forward(self, x, pos):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4).unbind(0)
        return _rope(q, pos), _rope(k, pos), v


def get_inputs():
    return [torch.randn(1, 16, 384), torch.arange(16)]


def get_init_inputs():
    return [384, 6]
