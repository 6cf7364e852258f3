import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_gaussian_blur_downsample",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "Image pyramid",
    "description": "One Gaussian pyramid level: separable 5-tap binomial blur (horizontal then vertical depthwise convs, reflect pad), stride-2 subsample",
    "source": "Image pyramid construction of feature trackers (KLT / ORB-SLAM pyramids), 3-channel 240x320 frame",
}


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        k = torch.tensor([1.0, 4.0, 6.0, 4.0, 1.0]) / 16
        self.register_buffer("kh", k.view(1, 1, 1, 5).repeat(c, 1, 1, 1))
        self.register_buffer("kv", k.view(1, 1, 5, 1).repeat(c, 1, 1, 1))
        self.c = c

    def forward(self, x):
        x = F.pad(x, (2, 2, 2, 2), mode="reflect")
        x = F.conv2d(F.conv2d(x, self.kh, groups=self.c), self.kv, groups=self.c)
        return x[:, :, ::2, ::2]


def get_inputs():
    return [torch.rand(1, 3, 240, 320)]


def get_init_inputs():
    return [3]
