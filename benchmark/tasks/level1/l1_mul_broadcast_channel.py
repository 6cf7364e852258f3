import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_mul_broadcast_channel",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "description": "Channel-wise scaling: [1,C,H,W] * [1,C,1,1] (SE excite)",
    "source": "Squeeze-excitation scale in EfficientNet-B0 stage 3 (28x28x240)",
}


class Model(nn.Module):
    def forward(self, x, s):
        return x * s


def get_inputs():
    return [torch.randn(1, 240, 28, 28), torch.rand(1, 240, 1, 1)]


def get_init_inputs():
    return []
