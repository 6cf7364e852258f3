import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_roll_cyclic_shift",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "Swin",
    "description": "Cyclic shift of a 28x28x96 NHWC map by -3 rows and -3 columns (torch.roll)",
    "source": "Swin-T (Liu et al. 2021) shifted-window attention, window 7, shift 3, at a 112x112 input (stage 1)",
}


class Model(nn.Module):
    def forward(self, x):
        return torch.roll(x, shifts=(-3, -3), dims=(1, 2))


def get_inputs():
    return [torch.randn(1, 28, 28, 96)]


def get_init_inputs():
    return []
