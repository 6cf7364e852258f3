import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_espcn_pixel_shuffle",
    "level": 2,
    "domains": ["mobile"],
    "description": "ESPCN super-resolution tail: conv 3x3 + tanh, conv 3x3 to r^2 channels, pixel shuffle (x2)",
    "source": "ESPCN x2 on a 64x64 luminance patch (64 -> 32 -> 4 channels)",
}


class Model(nn.Module):
    def __init__(self, cin, mid, r):
        super().__init__()
        self.c1 = nn.Conv2d(cin, mid, 3, padding=1)
        self.c2 = nn.Conv2d(mid, r * r, 3, padding=1)
        self.r = r

    def forward(self, x):
        return F.pixel_shuffle(self.c2(torch.tanh(self.c1(x))), self.r)


def get_inputs():
    return [torch.randn(1, 64, 64, 64)]


def get_init_inputs():
    return [64, 32, 2]
