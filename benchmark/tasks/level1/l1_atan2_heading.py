import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_atan2_heading",
    "level": 1,
    "domains": ["robotics"],
    "family": "Odometry",
    "description": "Heading angles atan2(y, x) of 4096 planar vectors",
    "source": "Wheel / visual odometry heading from displacement vectors (4096 tracked features)",
}


class Model(nn.Module):
    def forward(self, y, x):
        return torch.atan2(y, x)


def get_inputs():
    return [torch.randn(1, 4096), torch.randn(1, 4096)]


def get_init_inputs():
    return []
