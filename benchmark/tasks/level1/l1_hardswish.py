import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_hardswish",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "description": "Hard-swish x * relu6(x + 3) / 6",
    "source": "MobileNetV3-Small activations (28x28x96)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.hardswish(x)


def get_inputs():
    return [torch.randn(1, 96, 28, 28) * 3.0]


def get_init_inputs():
    return []
