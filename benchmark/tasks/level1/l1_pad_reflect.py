import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_pad_reflect",
    "level": 1,
    "domains": ["mobile"],
    "description": "Reflection padding by 3 on each side",
    "source": "Fast style transfer / pix2pix input padding (3x128x128)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.pad(x, (3, 3, 3, 3), mode="reflect")


def get_inputs():
    return [torch.randn(1, 3, 128, 128)]


def get_init_inputs():
    return []
