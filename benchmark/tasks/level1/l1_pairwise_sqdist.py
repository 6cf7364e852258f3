import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_pairwise_sqdist",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "DGCNN",
    "description": "Pairwise squared distances between 512 points in 3-D (|a|^2 - 2ab + |b|^2)",
    "source": "DGCNN (Wang et al. 2019) k-NN graph construction, 512 points",
}


class Model(nn.Module):
    def forward(self, p):
        inner = -2 * torch.matmul(p, p.transpose(1, 2))
        sq = (p * p).sum(-1, keepdim=True)
        return sq + inner + sq.transpose(1, 2)


def get_inputs():
    return [torch.randn(1, 512, 3)]


def get_init_inputs():
    return []
