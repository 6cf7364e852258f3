import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_pointnet_shared_mlp",
    "level": 2,
    "domains": ["robotics"],
    "description": "PointNet shared MLP: Conv1d 3 -> 64 -> 128 -> 256 with BN + ReLU, then global max pool",
    "source": "PointNet classification encoder at reduced width (1024 points)",
}


class Model(nn.Module):
    def __init__(self, widths):
        super().__init__()
        layers, cin = [], 3
        for w in widths:
            bn = nn.BatchNorm1d(w)
            bn.running_mean.uniform_(-0.2, 0.2)
            bn.running_var.uniform_(0.5, 1.5)
            layers += [nn.Conv1d(cin, w, 1), bn, nn.ReLU()]
            cin = w
        self.mlp = nn.Sequential(*layers)

    def forward(self, pts):
        return self.mlp(pts).max(dim=2).values


def get_inputs():
    return [torch.randn(1, 3, 1024)]


def get_init_inputs():
    return [[64, 128, 256]]
