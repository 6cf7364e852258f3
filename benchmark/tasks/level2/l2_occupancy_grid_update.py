import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_occupancy_grid_update",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "Occupancy mapping",
    "description": "Log-odds occupancy update: add the sensor model inverse log-odds of a scan, clamp to [-5, 5], occupancy probability by sigmoid",
    "source": "Probabilistic occupancy grid mapping (Thrun et al. 2005, OctoMap clamping), 256x256 local grid",
}


class Model(nn.Module):
    def forward(self, logodds, hits, misses):
        l = logodds + 0.85 * hits - 0.4 * misses
        l = torch.clamp(l, -5.0, 5.0)
        return l, torch.sigmoid(l)


def get_inputs():
    return [torch.randn(1, 256, 256), (torch.rand(1, 256, 256) > 0.9).float(), (torch.rand(1, 256, 256) > 0.7).float()]


def get_init_inputs():
    return []
