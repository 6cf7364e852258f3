import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_prelu",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "description": "PReLU with one learned slope per channel",
    "source": "MobileFaceNet PReLU (56x56x64)",
}


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.act = nn.PReLU(c)
        self.act.weight.data.uniform_(0.05, 0.4)

    def forward(self, x):
        return self.act(x)


def get_inputs():
    return [torch.randn(1, 64, 56, 56)]


def get_init_inputs():
    return [64]
