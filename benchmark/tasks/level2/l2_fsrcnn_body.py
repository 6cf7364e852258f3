import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_fsrcnn_body",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "FSRCNN",
    "description": "FSRCNN body: 5x5 feature extraction (1 -> 56), 1x1 shrink (12), four 3x3 mapping convs, 1x1 expand (56), PReLU after each, 9x9 transposed conv x2",
    "source": "FSRCNN (Dong et al. 2016) x2 super-resolution of a 32x32 luminance tile",
}


class Model(nn.Module):
    def __init__(self, d, s, m):
        super().__init__()
        layers = [nn.Conv2d(1, d, 5, padding=2), nn.PReLU(d), nn.Conv2d(d, s, 1), nn.PReLU(s)]
        for _ in range(m):
            layers += [nn.Conv2d(s, s, 3, padding=1), nn.PReLU(s)]
        layers += [nn.Conv2d(s, d, 1), nn.PReLU(d)]
        self.body = nn.Sequential(*layers)
        self.up = nn.ConvTranspose2d(d, 1, 9, stride=2, padding=4, output_padding=1)

    def forward(self, x):
        return self.up(self.body(x))


def get_inputs():
    return [torch.rand(1, 1, 32, 32)]


def get_init_inputs():
    return [56, 12, 4]
