import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_addmm",
    "level": 1,
    "domains": ["aiot"],
    "description": "addmm: bias + x @ W for a small MLP layer (batch of 32 sensor windows)",
    "source": "IMU activity-recognition MLP hidden layer (128 -> 256), batch 32",
}


class Model(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d_in, d_out) / d_in ** 0.5)
        self.b = nn.Parameter(torch.randn(d_out) * 0.1)

    def forward(self, x):
        return torch.addmm(self.b, x, self.w)


def get_inputs():
    return [torch.randn(32, 128)]


def get_init_inputs():
    return [128, 256]
