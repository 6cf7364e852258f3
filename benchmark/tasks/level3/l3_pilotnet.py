import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_pilotnet",
    "level": 3,
    "domains": ["robotics"],
    "family": "PilotNet",
    "description": "PilotNet end-to-end steering network: normalisation, 5 convs (24/36/48 5x5 s2, 64/64 3x3) with ELU, 4 FC layers to one steering angle",
    "source": "NVIDIA PilotNet (Bojarski et al. 2016), 66x200 YUV input",
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.Sequential(nn.Conv2d(3, 24, 5, 2), nn.ELU(), nn.Conv2d(24, 36, 5, 2), nn.ELU(),
                                   nn.Conv2d(36, 48, 5, 2), nn.ELU(), nn.Conv2d(48, 64, 3), nn.ELU(),
                                   nn.Conv2d(64, 64, 3), nn.ELU())
        self.fcs = nn.Sequential(nn.Linear(64 * 1 * 18, 100), nn.ELU(), nn.Linear(100, 50), nn.ELU(),
                                 nn.Linear(50, 10), nn.ELU(), nn.Linear(10, 1))

    def forward(self, x):
        return self.fcs(torch.flatten(self.convs(x / 127.5 - 1.0), 1))


def get_inputs():
    return [torch.rand(1, 3, 66, 200) * 255]


def get_init_inputs():
    return []
