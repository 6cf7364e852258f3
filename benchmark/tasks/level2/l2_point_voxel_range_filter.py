import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_point_voxel_range_filter",
    "level": 2,
    "domains": ["robotics"],
    "description": "LiDAR preprocessing: range mask, intensity normalise, distance feature, masked points zeroed",
    "source": "KITTI-style crop [0, 69.12] x [-39.68, 39.68] x [-3, 1] on a 16384-point sweep",
}


class Model(nn.Module):
    def __init__(self, lo, hi):
        super().__init__()
        self.register_buffer("lo", torch.tensor(lo))
        self.register_buffer("hi", torch.tensor(hi))

    def forward(self, pts):
        xyz = pts[:, :3]
        keep = ((xyz >= self.lo) & (xyz <= self.hi)).all(dim=1, keepdim=True).to(pts.dtype)
        dist = torch.sqrt((xyz * xyz).sum(1, keepdim=True))
        inten = torch.clamp(pts[:, 3:4] / 255.0, 0.0, 1.0)
        return torch.cat([xyz, inten, dist], 1) * keep


def get_inputs():
    return [torch.cat([torch.rand(16384, 1) * 80 - 5, torch.rand(16384, 1) * 90 - 45, torch.rand(16384, 1) * 5 - 3.5, torch.rand(16384, 1) * 300], 1)]


def get_init_inputs():
    return [[0.0, -39.68, -3.0], [69.12, 39.68, 1.0]]
