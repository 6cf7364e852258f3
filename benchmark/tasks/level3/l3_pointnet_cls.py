import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_pointnet_cls",
    "level": 3,
    "domains": ["robotics", "aiot"],
    "family": "PointNet",
    "description": "Vanilla PointNet classifier (no T-Nets): shared MLP 3-64-64-64-128-1024 with BN-ReLU over 1024 points, max pool, FC 512-256-40",
    "source": "PointNet (Qi et al. 2017) vanilla variant, ModelNet40, 1024 points",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


def _mlp(cin, cout):
    return nn.Sequential(nn.Conv1d(cin, cout, 1, bias=False), _bn(cout, nn.BatchNorm1d), nn.ReLU())


class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.feat = nn.Sequential(_mlp(3, 64), _mlp(64, 64), _mlp(64, 64), _mlp(64, 128), _mlp(128, 1024))
        self.head = nn.Sequential(nn.Linear(1024, 512, bias=False), _bn(512, nn.BatchNorm1d), nn.ReLU(),
                                  nn.Linear(512, 256, bias=False), _bn(256, nn.BatchNorm1d), nn.ReLU(),
                                  nn.Linear(256, num_classes))

    def forward(self, pts):
        return self.head(self.feat(pts).amax(dim=2))


def get_inputs():
    return [torch.randn(1, 3, 1024)]


def get_init_inputs():
    return [40]
