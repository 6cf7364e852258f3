import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_split_chunk",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "Split into 2 halves along channels and return both (C2f / ShuffleNet split)",
    "source": "YOLOv8n C2f split (40x40x64)",
}


class Model(nn.Module):
    def forward(self, x):
        return torch.chunk(x, 2, dim=1)


def get_inputs():
    return [torch.randn(1, 64, 40, 40)]


def get_init_inputs():
    return []
