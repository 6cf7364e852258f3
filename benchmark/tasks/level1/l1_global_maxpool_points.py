import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_global_maxpool_points",
    "level": 1,
    "domains": ["robotics"],
    "description": "Global max pooling over 1024 points (PointNet symmetric function)",
    "source": "PointNet global feature (1024 points x 256 features)",
}


class Model(nn.Module):
    def forward(self, x):
        return x.max(dim=2).values


def get_inputs():
    return [torch.randn(1, 256, 1024)]


def get_init_inputs():
    return []
