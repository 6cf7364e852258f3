import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_softplus",
    "level": 1,
    "domains": ["aiot"],
    "description": "Softplus log(1 + exp(x)) (beta 1, threshold 20)",
    "source": "Mamba / S4 dt projection softplus (64 tokens x 1024)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.softplus(x)


def get_inputs():
    return [torch.randn(1, 64, 1024) * 3.0]


def get_init_inputs():
    return []
