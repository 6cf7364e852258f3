import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_rmsnorm",
    "level": 1,
    "domains": ["mobile", "robotics", "aiot"],
    "description": "RMSNorm over 512 features of 64 tokens (x * rsqrt(mean(x^2) + eps) * w)",
    "source": "Llama-style RMSNorm at d_model 512, 64-token prefill",
}


class Model(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def get_inputs():
    return [torch.randn(1, 64, 512)]


def get_init_inputs():
    return [512]
