import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_unet_up_block",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "U-Net",
    "description": "U-Net decoder step: 2x2 transposed conv up, concat with the skip, two 3x3 conv-BN-ReLU (64 -> 32 channels)",
    "source": "U-Net (Ronneberger et al. 2015) at 1/4 width, decoder level 3 -> 2 at a 64x64 input (16x16 -> 32x32)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cout, 2, stride=2)
        self.convs = nn.Sequential(nn.Conv2d(2 * cout, cout, 3, padding=1, bias=False), _bn(cout), nn.ReLU(),
                                   nn.Conv2d(cout, cout, 3, padding=1, bias=False), _bn(cout), nn.ReLU())

    def forward(self, x, skip):
        return self.convs(torch.cat([self.up(x), skip], dim=1))


def get_inputs():
    return [torch.randn(1, 64, 16, 16), torch.randn(1, 32, 32, 32)]


def get_init_inputs():
    return [64, 32]
