import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_zero_dce_curve",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "Zero-DCE",
    "description": "Zero-DCE light enhancement: 8 iterations of the quadratic curve x + a_i x (1 - x) with per-pixel curve maps",
    "source": "Zero-DCE (Guo et al. 2020) LE-curve application on a 3x128x128 low-light frame (24 curve-parameter maps)",
}


class Model(nn.Module):
    def forward(self, x, a):
        for r in torch.split(torch.tanh(a), 3, dim=1):
            x = x + r * (x - x * x)
        return x


def get_inputs():
    return [torch.rand(1, 3, 128, 128), torch.randn(1, 24, 128, 128)]


def get_init_inputs():
    return []
