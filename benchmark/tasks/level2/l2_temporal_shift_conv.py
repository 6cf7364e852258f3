import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_temporal_shift_conv",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "TSM",
    "description": "Temporal shift module: shift 1/8 of the channels forward and 1/8 backward across 8 frames (zero fill), then a 3x3 conv",
    "source": "TSM (Lin et al. 2019) on a MobileNetV2 block for on-device video recognition, 8 frames x 32 channels x 14x14",
}


class Model(nn.Module):
    def __init__(self, c, fold_div):
        super().__init__()
        self.fold = c // fold_div
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)

    def forward(self, x):
        t, c, h, w = x.shape
        f = self.fold
        z = torch.zeros(1, f, h, w)
        back = torch.cat([x[1:, :f], z], dim=0)
        fwd = torch.cat([z, x[:-1, f:2 * f]], dim=0)
        return self.conv(torch.cat([back, fwd, x[:, 2 * f:]], dim=1))


def get_inputs():
    return [torch.randn(8, 32, 14, 14)]


def get_init_inputs():
    return [32, 8]
