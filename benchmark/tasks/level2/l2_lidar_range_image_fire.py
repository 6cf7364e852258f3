import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_lidar_range_image_fire",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "SqueezeSeg",
    "description": "SqueezeSeg fire module on a LiDAR range image: 1x1 squeeze (128 -> 16), 1x1 and 3x3 expands (64 + 64), ReLU, concat",
    "source": "SqueezeSegV2 (Wu et al. 2019) fire3 on a 64 x 128 range image crop (5 input channels after the stem), width-2 max pool applied before",
}


class Model(nn.Module):
    def __init__(self, cin, s, e):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, s, 1)
        self.e1 = nn.Conv2d(s, e, 1)
        self.e3 = nn.Conv2d(s, e, 3, padding=1)

    def forward(self, x):
        x = F.max_pool2d(x, (1, 2))
        s = F.relu(self.squeeze(x))
        return torch.cat([F.relu(self.e1(s)), F.relu(self.e3(s))], dim=1)


def get_inputs():
    return [torch.randn(1, 128, 64, 64)]


def get_init_inputs():
    return [128, 16, 64]
