import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_pointnet_sa_group_mlp",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "PointNet++",
    "description": "PointNet++ set abstraction on grouped points: relative coordinates (neighbours minus centroid), concat features, shared MLP 3+32 -> 64 -> 64 -> 128 with BN-ReLU, max over 32 neighbours",
    "source": "PointNet++ SSG (Qi et al. 2017) SA2 at reduced size: 128 centroids x 32 neighbours (grouping given)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


def _mlp(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), _bn(cout), nn.ReLU())


class Model(nn.Module):
    def __init__(self, cf):
        super().__init__()
        self.mlp = nn.Sequential(_mlp(3 + cf, 64), _mlp(64, 64), _mlp(64, 128))

    def forward(self, grouped_xyz, centroids, grouped_feat):
        rel = grouped_xyz - centroids.unsqueeze(-1)
        return self.mlp(torch.cat([rel, grouped_feat], dim=1)).amax(dim=-1)


def get_inputs():
    return [torch.randn(1, 3, 128, 32), torch.randn(1, 3, 128), torch.randn(1, 32, 128, 32)]


def get_init_inputs():
    return [32]
