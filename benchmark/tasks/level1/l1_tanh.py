import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_tanh",
    "level": 1,
    "domains": ["aiot"],
    "description": "Tanh (LSTM / GRU cell nonlinearity)",
    "source": "Keyword-spotting GRU gates (batch 1, 4 x 256 hidden)",
}


class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x)


def get_inputs():
    return [torch.randn(1, 1024) * 2.0]


def get_init_inputs():
    return []
