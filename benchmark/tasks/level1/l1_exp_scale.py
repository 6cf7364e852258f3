import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_exp_scale",
    "level": 1,
    "domains": ["robotics"],
    "description": "exp(x) * stride: FCOS / anchor-free box-size decoding",
    "source": "FCOS regression decode at stride 8 (40x40x4)",
}


class Model(nn.Module):
    def forward(self, x):
        return torch.exp(x) * 8.0


def get_inputs():
    return [torch.randn(1, 4, 40, 40)]


def get_init_inputs():
    return []
