import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_rigid_transform_points",
    "level": 1,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "LiDAR",
    "description": "Rigid transform of 16384 points: p R^T + t",
    "source": "LiDAR-to-camera extrinsic transform of a 16k-point sweep (KITTI-style calibration)",
}


class Model(nn.Module):
    def forward(self, p, r, t):
        return torch.matmul(p, r.transpose(-1, -2)) + t


def get_inputs():
    return [torch.randn(1, 16384, 3) * 20, torch.linalg.qr(torch.randn(1, 3, 3))[0], torch.randn(1, 1, 3)]


def get_init_inputs():
    return []
