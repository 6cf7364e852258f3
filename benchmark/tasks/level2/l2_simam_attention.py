import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_simam_attention",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "SimAM",
    "description": "SimAM parameter-free attention: per-channel energy from the squared deviation, sigmoid gate",
    "source": "SimAM (Yang et al. 2021, lambda 1e-4) in a ResNet-18 block at 28x28x64",
}


class Model(nn.Module):
    def __init__(self, lam):
        super().__init__()
        self.lam = lam

    def forward(self, x):
        n = x.shape[2] * x.shape[3] - 1
        d = (x - x.mean(dim=(2, 3), keepdim=True)) ** 2
        v = d.sum(dim=(2, 3), keepdim=True) / n
        e = d / (4 * (v + self.lam)) + 0.5
        return x * torch.sigmoid(e)


def get_inputs():
    return [torch.randn(1, 64, 28, 28)]


def get_init_inputs():
    return [1e-4]
