import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_yolox_decoupled_head",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "YOLOX",
    "description": "YOLOX decoupled head at one level: 1x1 stem, cls branch (two 3x3) -> 80, reg branch (two 3x3) -> 4 box + 1 objectness, sigmoid on cls / obj",
    "source": "YOLOX-Nano (Ge et al. 2021) head at stride 16 (64 channels, 16x16 at a 256x256 input), depthwise convs as in Nano",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


def _dw(c):
    return nn.Sequential(nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False), _bn(c), nn.SiLU(),
                         nn.Conv2d(c, c, 1, bias=False), _bn(c), nn.SiLU())


class Model(nn.Module):
    def __init__(self, cin, c, nc):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(cin, c, 1, bias=False), _bn(c), nn.SiLU())
        self.cls_convs = nn.Sequential(_dw(c), _dw(c))
        self.reg_convs = nn.Sequential(_dw(c), _dw(c))
        self.cls = nn.Conv2d(c, nc, 1)
        self.reg = nn.Conv2d(c, 4, 1)
        self.obj = nn.Conv2d(c, 1, 1)

    def forward(self, x):
        x = self.stem(x)
        r = self.reg_convs(x)
        return torch.cat([self.reg(r), torch.sigmoid(self.obj(r)), torch.sigmoid(self.cls(self.cls_convs(x)))], 1)


def get_inputs():
    return [torch.randn(1, 128, 16, 16)]


def get_init_inputs():
    return [128, 64, 80]
