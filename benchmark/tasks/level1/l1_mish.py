import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_mish",
    "level": 1,
    "domains": ["robotics"],
    "description": "Mish x * tanh(softplus(x))",
    "source": "YOLOv4-tiny CSP backbone activations (52x52x64)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.mish(x)


def get_inputs():
    return [torch.randn(1, 64, 52, 52) * 2.0]


def get_init_inputs():
    return []
