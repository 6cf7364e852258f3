import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_max_dim",
    "level": 1,
    "domains": ["robotics"],
    "description": "Max over the class dim with indices (per-anchor best class score and label)",
    "source": "SSD / YOLO post-processing: 2100 anchors x 80 classes (320x320 YOLOv8n)",
}


class Model(nn.Module):
    def forward(self, x):
        return torch.max(x, dim=-1)


def get_inputs():
    return [torch.randn(1, 2100, 80)]


def get_init_inputs():
    return []
