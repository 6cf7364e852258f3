import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_sigmoid",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "description": "Sigmoid on detection class logits",
    "source": "YOLOv5n class scores at 320x320 (3 anchors x 80 classes, 40x40)",
}


class Model(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn(1, 3, 40, 40, 85) * 3.0]


def get_init_inputs():
    return []
