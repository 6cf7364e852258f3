import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_unet_down_block",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "U-Net",
    "description": "U-Net encoder step: 2x2 max pool, then two 3x3 conv-BN-ReLU (32 -> 64 channels)",
    "source": "U-Net (Ronneberger et al. 2015) at 1/4 width, encoder level 2 -> 3 at a 64x64 input (32x32 -> 16x16)",
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
        self.convs = nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), _bn(cout), nn.ReLU(),
                                   nn.Conv2d(cout, cout, 3, padding=1, bias=False), _bn(cout), nn.ReLU())

    def forward(self, x):
        return self.convs(F.max_pool2d(x, 2))


def get_inputs():
    return [torch.randn(1, 32, 32, 32)]


def get_init_inputs():
    return [32, 64]
