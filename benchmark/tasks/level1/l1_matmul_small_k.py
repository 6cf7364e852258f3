import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_matmul_small_k",
    "level": 1,
    "domains": ["robotics"],
    "description": "Small-K matmul: 4096 points x 9 features @ 9x64 (K = 9)",
    "source": "PointPillars pillar feature net linear layer (9 decorated point features -> 64)",
}


class Model(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n) * 0.3)

    def forward(self, x):
        return x @ self.weight


def get_inputs():
    return [torch.randn(4096, 9)]


def get_init_inputs():
    return [9, 64]
