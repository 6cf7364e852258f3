import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_pixel_unshuffle",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "YOLOv5",
    "description": "Pixel unshuffle (space to depth) by 2: 3x256x256 -> 12x128x128",
    "source": "YOLOv5 v5.0 Focus layer as space-to-depth on a 256x256 frame",
}


class Model(nn.Module):
    def forward(self, x):
        return F.pixel_unshuffle(x, 2)


def get_inputs():
    return [torch.randn(1, 3, 256, 256)]


def get_init_inputs():
    return []
