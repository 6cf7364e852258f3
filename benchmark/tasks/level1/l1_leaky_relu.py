import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_leaky_relu",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "description": "LeakyReLU, slope 0.1",
    "source": "YOLOv3-tiny / Darknet activations (52x52x128)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.leaky_relu(x, 0.1)


def get_inputs():
    return [torch.randn(1, 128, 52, 52) * 2.0]


def get_init_inputs():
    return []
