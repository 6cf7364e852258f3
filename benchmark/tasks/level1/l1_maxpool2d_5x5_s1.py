import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_maxpool2d_5x5_s1",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "YOLOv5",
    "description": "5x5 max pooling, stride 1, pad 2 (same size), 128 channels",
    "source": "YOLOv5n SPPF max pool at a 256x256 input (8x8x128)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.max_pool2d(x, 5, 1, 2)


def get_inputs():
    return [torch.randn(1, 128, 8, 8)]


def get_init_inputs():
    return []
