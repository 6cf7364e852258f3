import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv_transpose1d_upsample",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "family": "HiFi-GAN",
    "description": "Transposed 1-D conv, kernel 16, stride 8, pad 4, 128 -> 64 channels",
    "source": "HiFi-GAN V3 vocoder (Kong et al. 2020) first upsampling layer, 32 mel frames",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.up = nn.ConvTranspose1d(cin, cout, 16, stride=8, padding=4)

    def forward(self, x):
        return self.up(x)


def get_inputs():
    return [torch.randn(1, 128, 32)]


def get_init_inputs():
    return [128, 64]
