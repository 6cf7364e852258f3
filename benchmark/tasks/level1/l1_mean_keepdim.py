import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_mean_keepdim",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "Mean over the channel dim with keepdim (CBAM-style spatial descriptor)",
    "source": "CBAM spatial attention mean over channels (28x28x128)",
}


class Model(nn.Module):
    def forward(self, x):
        return x.mean(1, keepdim=True)


def get_inputs():
    return [torch.randn(1, 128, 28, 28)]


def get_init_inputs():
    return []
