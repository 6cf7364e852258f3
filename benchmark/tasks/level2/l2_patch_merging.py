import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_patch_merging",
    "level": 2,
    "domains": ["mobile", "robotics"],
    "description": "Swin patch merging: 2x2 neighbour gather (strided slices), concat to 4C, LayerNorm, Linear 4C -> 2C",
    "source": "Swin-T stage 1 -> 2 at 112x112 input (28x28x96 -> 14x14x192)",
}


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(4 * d)
        self.reduction = nn.Linear(4 * d, 2 * d, bias=False)

    def forward(self, x):
        x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
        return self.reduction(self.norm(x))


def get_inputs():
    return [torch.randn(1, 28, 28, 96)]


def get_init_inputs():
    return [96]
