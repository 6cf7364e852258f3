import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_normalize_image",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "ImageNet preprocessing",
    "description": "Per-channel (x - mean) / std on a 3x224x224 image",
    "source": "torchvision ImageNet normalisation (mean 0.485/0.456/0.406, std 0.229/0.224/0.225) of a camera frame",
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))

    def forward(self, x):
        return (x - self.mean) / self.std


def get_inputs():
    return [torch.rand(1, 3, 224, 224)]


def get_init_inputs():
    return []
