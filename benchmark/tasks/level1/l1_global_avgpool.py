import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_global_avgpool",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "description": "Global average pooling 7x7 -> 1x1 over 1280 channels",
    "source": "MobileNetV2 final pooling (7x7x1280)",
}


class Model(nn.Module):
    def forward(self, x):
        return x.mean((2, 3))


def get_inputs():
    return [torch.randn(1, 1280, 7, 7)]


def get_init_inputs():
    return []
