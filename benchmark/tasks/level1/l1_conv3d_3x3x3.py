import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv3d_3x3x3",
    "level": 1,
    "domains": ["robotics"],
    "description": "3D conv 3x3x3, 16 -> 16 channels on a small voxel grid",
    "source": "SECOND / VoxelNet middle encoder conv (dense 8x32x32 voxel crop, 16 channels)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv3d(cin, cout, 3, padding=1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 16, 8, 32, 32)]


def get_init_inputs():
    return [16, 16]
