import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_fastdepth_upsample_block",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "FastDepth",
    "description": "FastDepth NNConv5 decoder step: dw5x5-BN-ReLU, 1x1-BN-ReLU, nearest 2x upsample, + skip",
    "source": "FastDepth (Wofk et al. 2019) decoder layer 2 on a MobileNet encoder, 128x128 input (8x8x512 -> 16x16x256 with skip)",
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
        self.dw = nn.Sequential(nn.Conv2d(cin, cin, 5, padding=2, groups=cin, bias=False), _bn(cin), nn.ReLU())
        self.pw = nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), _bn(cout), nn.ReLU())

    def forward(self, x, skip):
        return F.interpolate(self.pw(self.dw(x)), scale_factor=2, mode="nearest") + skip


def get_inputs():
    return [torch.randn(1, 512, 8, 8), torch.randn(1, 256, 16, 16)]


def get_init_inputs():
    return [512, 256]
