import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_var_mean",
    "level": 1,
    "domains": ["aiot", "mobile"],
    "description": "Variance and mean over the last dim (population variance; torch.var + mean, since TVM 0.27 cannot import aten.var_mean)",
    "source": "Sensor-window statistics features (64 windows x 256 samples)",
}


class Model(nn.Module):
    def forward(self, x):
        return (torch.var(x, dim=-1, unbiased=False), x.mean(-1))


def get_inputs():
    return [torch.randn(64, 256) + 1.0]


def get_init_inputs():
    return []
