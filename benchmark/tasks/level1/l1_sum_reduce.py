import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_sum_reduce",
    "level": 1,
    "domains": ["aiot"],
    "description": "Sum over the last dim (frame energies)",
    "source": "KWS log-mel energy per frame (101 frames x 40 bins)",
}


class Model(nn.Module):
    def forward(self, x):
        return x.sum(-1)


def get_inputs():
    return [torch.randn(1, 101, 40)]


def get_init_inputs():
    return []
