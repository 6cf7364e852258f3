import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_cumsum",
    "level": 1,
    "domains": ["aiot", "robotics"],
    "description": "Cumulative sum along time",
    "source": "Integrating IMU acceleration (6 axes x 512 samples)",
}


class Model(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=-1)


def get_inputs():
    return [torch.randn(1, 6, 512)]


def get_init_inputs():
    return []
