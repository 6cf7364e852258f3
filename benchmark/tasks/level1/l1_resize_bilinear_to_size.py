import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_resize_bilinear_to_size",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "Bilinear resize to a fixed size with align_corners=True (non-integer ratio)",
    "source": "Segmentation logits back to input size (19 classes, 33x65 -> 128x256)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.interpolate(x, size=(128, 256), mode="bilinear", align_corners=True)


def get_inputs():
    return [torch.randn(1, 19, 33, 65)]


def get_init_inputs():
    return []
