import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_topk",
    "level": 1,
    "domains": ["robotics", "mobile"],
    "description": "Top-k (k=100) scores and indices over 2100 candidates",
    "source": "YOLOv8n 320x320 pre-NMS candidate selection",
}


class Model(nn.Module):
    def forward(self, x):
        return torch.topk(x, 100, dim=-1)


def get_inputs():
    return [torch.randn(1, 2100)]


def get_init_inputs():
    return []
