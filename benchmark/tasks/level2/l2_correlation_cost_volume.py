import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_correlation_cost_volume",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "PWC-Net",
    "description": "Local correlation cost volume: mean over channels of f1 * shifted f2 for 7x7 displacements (max 3), leaky ReLU",
    "source": "PWC-Net (Sun et al. 2018) cost volume at 1/16 resolution (16x16x64 for a 256x256 pair), search range 3; robot odometry and smart-camera motion analysis",
}


class Model(nn.Module):
    def __init__(self, r):
        super().__init__()
        self.r = r

    def forward(self, f1, f2):
        r = self.r
        h, w = f1.shape[2], f1.shape[3]
        f2p = F.pad(f2, (r, r, r, r))
        out = []
        for dy in range(2 * r + 1):
            for dx in range(2 * r + 1):
                out.append((f1 * f2p[:, :, dy:dy + h, dx:dx + w]).mean(1, keepdim=True))
        return F.leaky_relu(torch.cat(out, dim=1), 0.1)


def get_inputs():
    return [torch.randn(1, 64, 16, 16), torch.randn(1, 64, 16, 16)]


def get_init_inputs():
    return [3]
