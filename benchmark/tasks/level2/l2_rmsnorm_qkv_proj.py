import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_rmsnorm_qkv_proj",
    "level": 2,
    "domains": ["mobile", "robotics"],
    "description": "RMSNorm followed by the fused q/k/v projection (d 512 -> 512 + 2 x 128)",
    "source": "Qwen2-style input_layernorm + qkv projection at d_model 512 (2 KV heads), 32 tokens",
}


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class Model(nn.Module):
    def __init__(self, d, dkv):
        super().__init__()
        self.norm = RMSNorm(d)
        self.qkv = nn.Linear(d, d + 2 * dkv)

    def forward(self, x):
        return self.qkv(self.norm(x))


def get_inputs():
    return [torch.randn(1, 32, 512)]


def get_init_inputs():
    return [512, 128]
