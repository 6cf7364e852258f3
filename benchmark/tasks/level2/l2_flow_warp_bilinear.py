import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_flow_warp_bilinear",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "Optical flow",
    "description": "Backward warp by a flow field with bilinear interpolation written out (floor, fractional weights, four gathers), border clamped",
    "source": "Flow-based feature warping (PWC-Net / RAFT warping layer) at 1/8 of a 256x256 pair (32x32x32), gathers instead of grid_sample",
}


class Model(nn.Module):
    def forward(self, feat, flow):
        n, c, h, w = feat.shape
        ys, xs = torch.meshgrid(torch.arange(h).float(), torch.arange(w).float(), indexing="ij")
        x = (xs + flow[:, 0]).clamp(0, w - 1.001)
        y = (ys + flow[:, 1]).clamp(0, h - 1.001)
        x0, y0 = x.floor(), y.floor()
        fx, fy = (x - x0).unsqueeze(1), (y - y0).unsqueeze(1)
        x0, y0 = x0.long(), y0.long()
        flat = feat.flatten(2)

        def at(yy, xx):
            idx = (yy * w + xx).flatten(1).unsqueeze(1).expand(n, c, h * w)
            return torch.gather(flat, 2, idx).view(n, c, h, w)

        top = at(y0, x0) * (1 - fx) + at(y0, x0 + 1) * fx
        bot = at(y0 + 1, x0) * (1 - fx) + at(y0 + 1, x0 + 1) * fx
        return top * (1 - fy) + bot * fy


def get_inputs():
    return [torch.randn(1, 32, 32, 32), torch.randn(1, 2, 32, 32) * 3]


def get_init_inputs():
    return []
