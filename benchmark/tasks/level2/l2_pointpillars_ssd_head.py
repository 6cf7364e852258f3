import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_pointpillars_ssd_head",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "PointPillars",
    "description": "PointPillars SSD detection head: 1x1 convs for class scores (2 anchors x 3 classes), boxes (2 x 7) and direction (2 x 2) on the concatenated RPN map",
    "source": "PointPillars (Lang et al. 2019) head on the 3 x 64-channel upsampled RPN output at 32x32 (cropped KITTI grid)",
}


class Model(nn.Module):
    def __init__(self, c, a, nc):
        super().__init__()
        self.cls = nn.Conv2d(c, a * nc, 1)
        self.box = nn.Conv2d(c, a * 7, 1)
        self.dir = nn.Conv2d(c, a * 2, 1)

    def forward(self, x):
        return self.cls(x).sigmoid(), self.box(x), self.dir(x)


def get_inputs():
    return [torch.randn(1, 192, 32, 32)]


def get_init_inputs():
    return [192, 2, 3]
