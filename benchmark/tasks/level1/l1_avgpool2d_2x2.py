import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_avgpool2d_2x2",
    "level": 1,
    "domains": ["mobile"],
    "description": "Average pooling 2x2, stride 2",
    "source": "DenseNet-121 transition layer (28x28x256)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.avg_pool2d(x, 2)


def get_inputs():
    return [torch.randn(1, 256, 28, 28)]


def get_init_inputs():
    return []
