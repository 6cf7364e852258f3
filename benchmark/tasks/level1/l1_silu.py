import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_silu",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "SiLU (swish) x * sigmoid(x)",
    "source": "EfficientNet-B0 / YOLOv8 activations (40x40x64)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.silu(x)


def get_inputs():
    return [torch.randn(1, 64, 40, 40) * 2.0]


def get_init_inputs():
    return []
