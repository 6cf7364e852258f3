import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_quick_gelu",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "CLIP",
    "description": "QuickGELU x * sigmoid(1.702 x) over 50 tokens x 2048",
    "source": "CLIP ViT-B/32 MLP activation (Radford et al. 2021), 50 tokens, 4 x 512 hidden",
}


class Model(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


def get_inputs():
    return [torch.randn(1, 50, 2048)]


def get_init_inputs():
    return []
