import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_maxpool2d_2x2",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "description": "Max pooling 2x2, stride 2",
    "source": "U-Net encoder down-sampling (64x64x32)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.max_pool2d(x, 2)


def get_inputs():
    return [torch.randn(1, 32, 64, 64)]


def get_init_inputs():
    return []
