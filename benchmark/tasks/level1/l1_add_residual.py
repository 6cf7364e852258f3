import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_add_residual",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "description": "Elementwise residual add of two feature maps",
    "source": "MobileNetV2 residual (28x28x32)",
}


class Model(nn.Module):
    def forward(self, a, b):
        return a + b


def get_inputs():
    return [torch.randn(1, 32, 28, 28), torch.randn(1, 32, 28, 28)]


def get_init_inputs():
    return []
