import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_tcn_residual_block",
    "level": 2,
    "domains": ["aiot", "robotics"],
    "description": "TCN residual block: two dilated causal Conv1d (left pad) + ReLU, 1x1 residual projection",
    "source": "Temporal conv net on IMU / vibration sensor data (6 -> 32 channels, kernel 3, dilation 4, 256 samples)",
}


class Model(nn.Module):
    def __init__(self, cin, c, k, d):
        super().__init__()
        self.pad = (k - 1) * d
        self.c1 = nn.Conv1d(cin, c, k, dilation=d)
        self.c2 = nn.Conv1d(c, c, k, dilation=d)
        self.res = nn.Conv1d(cin, c, 1)

    def forward(self, x):
        y = F.relu(self.c1(F.pad(x, (self.pad, 0))))
        y = F.relu(self.c2(F.pad(y, (self.pad, 0))))
        return F.relu(y + self.res(x))


def get_inputs():
    return [torch.randn(1, 6, 256)]


def get_init_inputs():
    return [6, 32, 3, 4]
