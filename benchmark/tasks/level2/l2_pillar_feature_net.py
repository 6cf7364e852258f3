import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_pillar_feature_net",
    "level": 2,
    "domains": ["robotics"],
    "description": "PointPillars PFN layer: Linear 9 -> 64 (no bias) + BatchNorm1d + ReLU + max over the points of each pillar",
    "source": "PointPillars (KITTI) PFN: 2000 non-empty pillars x 32 points x 9 decorated features",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.linear = nn.Linear(cin, cout, bias=False)
        self.bn = nn.BatchNorm1d(cout, eps=1e-3)
        self.bn.running_mean.uniform_(-0.2, 0.2)
        self.bn.running_var.uniform_(0.5, 1.5)
        self.bn.weight.data.uniform_(0.5, 1.5)
        self.bn.bias.data.uniform_(-0.2, 0.2)

    def forward(self, x):
        y = self.linear(x)  # [P, N, 64]
        y = F.relu(self.bn(y.permute(0, 2, 1)).permute(0, 2, 1))
        return y.max(dim=1).values


def get_inputs():
    return [torch.randn(2000, 32, 9)]


def get_init_inputs():
    return [9, 64]
