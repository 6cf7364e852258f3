import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_concat_channels",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "Concatenate three feature maps along channels",
    "source": "Inception / YOLO concat (20x20: 64 + 128 + 64 channels)",
}


class Model(nn.Module):
    def forward(self, a, b, c):
        return torch.cat([a, b, c], dim=1)


def get_inputs():
    return [torch.randn(1, 64, 20, 20), torch.randn(1, 128, 20, 20), torch.randn(1, 64, 20, 20)]


def get_init_inputs():
    return []
