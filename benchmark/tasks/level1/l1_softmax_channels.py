import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_softmax_channels",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "description": "Softmax over the class channel of a segmentation map (dim 1)",
    "source": "Fast-SCNN / BiSeNet 19-class output at 64x128",
}


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(1, 19, 64, 128) * 3]


def get_init_inputs():
    return []
