import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_voxel_mean_vfe",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "SECOND",
    "description": "Mean voxel feature encoder: sum of up to 5 points per voxel masked by the point count, divided by the count (min 1)",
    "source": "SECOND (Yan et al. 2018) / CenterPoint MeanVFE on 8000 voxels x 5 points x 4 features (KITTI)",
}


class Model(nn.Module):
    def forward(self, points, num):
        mask = (torch.arange(points.shape[1])[None, :] < num[:, None]).float().unsqueeze(-1)
        return (points * mask).sum(1) / num.float().clamp(min=1.0).unsqueeze(-1)


def get_inputs():
    return [torch.randn(8000, 5, 4), torch.randint(1, 6, (8000,))]


def get_init_inputs():
    return []
