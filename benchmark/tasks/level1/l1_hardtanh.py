import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_hardtanh",
    "level": 1,
    "domains": ["aiot"],
    "family": "TinyML",
    "description": "Hardtanh clamp to [-1, 1] over a 32x32x32 activation",
    "source": "Binary/ternary MCU networks (Courbariaux et al. 2016 BinaryNet) activation at 32x32x32",
}


class Model(nn.Module):
    def forward(self, x):
        return F.hardtanh(x, -1.0, 1.0)


def get_inputs():
    return [torch.randn(1, 32, 32, 32) * 2]


def get_init_inputs():
    return []
