import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_vector_norm",
    "level": 1,
    "domains": ["robotics"],
    "description": "Euclidean norm of 3-d offsets (point distances)",
    "source": "Point-cloud range / radius features (16384 points)",
}


class Model(nn.Module):
    def forward(self, x):
        return torch.linalg.vector_norm(x, dim=-1)


def get_inputs():
    return [torch.randn(16384, 3) * 10]


def get_init_inputs():
    return []
