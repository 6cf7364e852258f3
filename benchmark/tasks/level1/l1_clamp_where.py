import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_clamp_where",
    "level": 1,
    "domains": ["aiot", "robotics"],
    "description": "Masked fill with where + clamp: invalid depth pixels to 0, depth clamped to [0.1, 10]",
    "source": "Depth-camera preprocessing (240x320 depth map)",
}


class Model(nn.Module):
    def forward(self, x):
        return torch.where(x > 0, torch.clamp(x, 0.1, 10.0), torch.zeros_like(x))


def get_inputs():
    return [torch.randn(1, 1, 240, 320) * 4 + 2]


def get_init_inputs():
    return []
