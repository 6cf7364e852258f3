import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_rsqrt_pow",
    "level": 1,
    "domains": ["mobile"],
    "description": "x * rsqrt(y^2 + eps): normalise by a second tensor's magnitude",
    "source": "Norm-based scaling (64 x 512)",
}


class Model(nn.Module):
    def forward(self, x, y):
        return x * torch.rsqrt(y.pow(2) + 1e-6)


def get_inputs():
    return [torch.randn(64, 512), torch.randn(64, 512) + 2.0]


def get_init_inputs():
    return []
