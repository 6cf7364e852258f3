import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_hardsigmoid",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "description": "Hard-sigmoid relu6(x + 3) / 6",
    "source": "MobileNetV3 SE gate (1x1x576)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.hardsigmoid(x)


def get_inputs():
    return [torch.randn(1, 576, 1, 1) * 3.0]


def get_init_inputs():
    return []
