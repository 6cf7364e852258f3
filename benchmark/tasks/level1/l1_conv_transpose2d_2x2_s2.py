import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv_transpose2d_2x2_s2",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "U-Net",
    "description": "Transposed 2x2 conv, stride 2, 64 -> 32 channels (U-Net up-convolution)",
    "source": "U-Net (Ronneberger et al. 2015) at 1/4 width, decoder up-conv 24x24 -> 48x48",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cout, 2, stride=2)

    def forward(self, x):
        return self.up(x)


def get_inputs():
    return [torch.randn(1, 64, 24, 24)]


def get_init_inputs():
    return [64, 32]
