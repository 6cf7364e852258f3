import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_index_select",
    "level": 1,
    "domains": ["robotics"],
    "description": "index_select of 2000 rows (pillars) out of 12000 by index",
    "source": "PointPillars voxel selection (12000 x 64 features)",
}


class Model(nn.Module):
    def forward(self, x, idx):
        return torch.index_select(x, 0, idx)


def get_inputs():
    return [torch.randn(12000, 64), torch.randint(0, 12000, (2000,))]


def get_init_inputs():
    return []
