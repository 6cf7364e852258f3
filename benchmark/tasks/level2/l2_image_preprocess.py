import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_image_preprocess",
    "level": 2,
    "domains": ["mobile", "aiot", "robotics"],
    "description": "Camera preprocessing: uint8 HWC -> float, /255, per-channel mean/std normalise, HWC -> CHW, bilinear resize",
    "source": "ImageNet-normalised 240x320 camera frame resized to 128x128 for a mobile classifier",
}


class Model(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.size = size
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))

    def forward(self, img):
        x = img.to(torch.float32).permute(2, 0, 1)[None] / 255.0
        x = (x - self.mean) / self.std
        return F.interpolate(x, size=(self.size, self.size), mode="bilinear", align_corners=False)


def get_inputs():
    return [torch.randint(0, 256, (240, 320, 3), dtype=torch.uint8)]


def get_init_inputs():
    return [128]
