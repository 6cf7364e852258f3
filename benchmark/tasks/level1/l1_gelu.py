import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_gelu",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "GELU, exact erf form",
    "source": "ViT / ConvNeXt MLP activation (197 x 768)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.gelu(x)


def get_inputs():
    return [torch.randn(1, 197, 768) * 2.0]


def get_init_inputs():
    return []
