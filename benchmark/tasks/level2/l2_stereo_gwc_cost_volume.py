import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_stereo_gwc_cost_volume",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "GwcNet",
    "description": "Group-wise correlation stereo cost volume: 8 groups, 12 disparities, mean within groups",
    "source": "GwcNet (Guo et al. 2019) cost volume at 1/4 resolution for a 96x192 stereo pair (24x48x64, 12 disparities)",
}


class Model(nn.Module):
    def __init__(self, groups, maxdisp):
        super().__init__()
        self.g, self.d = groups, maxdisp

    def forward(self, left, right):
        b, c, h, w = left.shape
        vols = []
        for d in range(self.d):
            shifted = F.pad(right, (d, 0))[:, :, :, :w]
            corr = (left * shifted).view(b, self.g, c // self.g, h, w).mean(2)
            vols.append(corr)
        return torch.stack(vols, dim=2)


def get_inputs():
    return [torch.randn(1, 64, 24, 48), torch.randn(1, 64, 24, 48)]


def get_init_inputs():
    return [8, 12]
