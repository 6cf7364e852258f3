import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_swin_shift_window_partition",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "Swin",
    "description": "Swin shifted-window partition: cyclic shift by -3, split 28x28 into 16 windows of 7x7, window tokens [16, 49, 96]",
    "source": "Swin-T (Liu et al. 2021) stage 1 at a 112x112 input (28x28x96, window 7, shift 3)",
}


class Model(nn.Module):
    def __init__(self, ws, shift):
        super().__init__()
        self.ws, self.shift = ws, shift

    def forward(self, x):
        b, h, w, c = x.shape
        x = torch.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        x = x.view(b, h // self.ws, self.ws, w // self.ws, self.ws, c).permute(0, 1, 3, 2, 4, 5)
        return x.reshape(-1, self.ws * self.ws, c)


def get_inputs():
    return [torch.randn(1, 28, 28, 96)]


def get_init_inputs():
    return [7, 3]
