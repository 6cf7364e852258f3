import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_linear_points",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "PointNet",
    "description": "Linear 64 -> 128 applied per point over 1024 points",
    "source": "PointNet (Qi et al. 2017) shared MLP layer 3 as a linear over 1024 points",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.fc = nn.Linear(cin, cout)

    def forward(self, x):
        return self.fc(x)


def get_inputs():
    return [torch.randn(1, 1024, 64)]


def get_init_inputs():
    return [64, 128]
