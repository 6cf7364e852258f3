import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_pillar_point_decorate",
    "level": 2,
    "domains": ["robotics"],
    "description": "PointPillars point decoration: offsets to the pillar's point mean and to the pillar centre, concat to 9 features, mask padded points",
    "source": "PointPillars (KITTI, 0.16 m pillars): 2000 pillars x 32 points x (x, y, z, r)",
}


class Model(nn.Module):
    def __init__(self, vx, vy, x0, y0):
        super().__init__()
        self.vx, self.vy, self.x0, self.y0 = vx, vy, x0, y0

    def forward(self, pts, num, coords):
        n = pts.shape[1]
        mask = (torch.arange(n)[None, :] < num[:, None]).to(pts.dtype)[..., None]  # [P, N, 1]
        mean = (pts[..., :3] * mask).sum(1, keepdim=True) / num.clamp(1, n).to(pts.dtype)[:, None, None]
        f_cluster = pts[..., :3] - mean
        cx = coords[:, 1:2].to(pts.dtype) * self.vx + (self.vx / 2 + self.x0)
        cy = coords[:, 0:1].to(pts.dtype) * self.vy + (self.vy / 2 + self.y0)
        f_center = torch.stack([pts[..., 0] - cx, pts[..., 1] - cy], -1)
        return torch.cat([pts, f_cluster, f_center], -1) * mask


def get_inputs():
    return [torch.randn(2000, 32, 4) * 5, torch.randint(1, 33, (2000,)), torch.randint(0, 432, (2000, 2))]


def get_init_inputs():
    return [0.16, 0.16, 0.0, -39.68]
