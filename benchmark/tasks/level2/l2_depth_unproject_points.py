import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_depth_unproject_points",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "RGB-D",
    "description": "Depth image to a camera-frame point cloud: pixel grid x depth through the inverse intrinsics, invalid depths (0) masked",
    "source": "RGB-D camera unprojection (RealSense D435-class 240x320 depth, fx = fy = 300) for robot grasping",
}


class Model(nn.Module):
    def __init__(self, h, w, f):
        super().__init__()
        v, u = torch.meshgrid(torch.arange(h).float(), torch.arange(w).float(), indexing="ij")
        self.register_buffer("xn", ((u - w / 2) / f)[None])
        self.register_buffer("yn", ((v - h / 2) / f)[None])

    def forward(self, depth):
        valid = (depth > 0.1).float()
        z = depth * valid
        return torch.stack([self.xn * z, self.yn * z, z], dim=-1)


def get_inputs():
    return [torch.rand(1, 240, 320) * 4]


def get_init_inputs():
    return [240, 320, 300.0]
