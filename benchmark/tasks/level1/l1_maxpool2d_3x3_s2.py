import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_maxpool2d_3x3_s2",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "Max pooling 3x3, stride 2, pad 1",
    "source": "ResNet-18 stem max-pool (112x112x64 -> 56x56)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.max_pool2d(x, 3, 2, 1)


def get_inputs():
    return [torch.randn(1, 64, 112, 112)]


def get_init_inputs():
    return []
