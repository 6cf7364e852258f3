import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_upsample_bilinear_2x",
    "level": 1,
    "domains": ["robotics", "mobile"],
    "description": "Bilinear 2x upsampling, align_corners=False",
    "source": "DeepLabV3+ decoder upsample (32x32x256 -> 64x64)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)


def get_inputs():
    return [torch.randn(1, 256, 32, 32)]


def get_init_inputs():
    return []
