import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_relu6",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "description": "ReLU6 (clamp 0..6)",
    "source": "MobileNetV2 activations (56x56x144)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.relu6(x)


def get_inputs():
    return [torch.randn(1, 144, 56, 56) * 3.0]


def get_init_inputs():
    return []
