import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_lstm_cell_step",
    "level": 2,
    "domains": ["aiot", "robotics"],
    "description": "LSTM cell step: fused gate matmuls (input + recurrent), sigmoid/tanh gates, new (h, c)",
    "source": "Keyword-spotting / IMU LSTM (input 40, hidden 256), batch 1",
}


class Model(nn.Module):
    def __init__(self, din, h):
        super().__init__()
        self.ih = nn.Linear(din, 4 * h)
        self.hh = nn.Linear(h, 4 * h)

    def forward(self, x, h, c):
        i, f, g, o = (self.ih(x) + self.hh(h)).chunk(4, -1)
        c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c2), c2


def get_inputs():
    return [torch.randn(1, 40), torch.randn(1, 256), torch.randn(1, 256)]


def get_init_inputs():
    return [40, 256]
