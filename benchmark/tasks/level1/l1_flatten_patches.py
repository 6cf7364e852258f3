import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_flatten_patches",
    "level": 1,
    "domains": ["mobile"],
    "description": "Patchify: [1, 3, 128, 128] -> [1, 64, 768] 16x16 patches via reshape/permute",
    "source": "ViT patch extraction at 128x128 (patch 16)",
}


class Model(nn.Module):
    def forward(self, x):
        return x.reshape(1, 3, 8, 16, 8, 16).permute(0, 2, 4, 1, 3, 5).reshape(1, 64, 768)


def get_inputs():
    return [torch.randn(1, 3, 128, 128)]


def get_init_inputs():
    return []
