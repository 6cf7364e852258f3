import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_conv_lstm_cell",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "ConvLSTM",
    "description": "ConvLSTM cell step: 3x3 conv over [x, h] to 4 gates, sigmoid / tanh gating, new (h, c)",
    "source": "ConvLSTM (Shi et al. 2015) for occupancy-grid / radar nowcasting, 32 channels at 32x32",
}


class Model(nn.Module):
    def __init__(self, cin, c):
        super().__init__()
        self.conv = nn.Conv2d(cin + c, 4 * c, 3, padding=1)

    def forward(self, x, h, c):
        i, f, g, o = self.conv(torch.cat([x, h], dim=1)).chunk(4, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c


def get_inputs():
    return [torch.randn(1, 16, 32, 32), torch.randn(1, 32, 32, 32), torch.randn(1, 32, 32, 32)]


def get_init_inputs():
    return [16, 32]
