import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_centerpoint_bev_head",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "CenterPoint",
    "description": "CenterPoint BEV head: shared 3x3 conv-BN-ReLU, then per-task branches (heatmap 3 classes, offset 2, height 1, size 3, rotation 2, velocity 2), each 3x3 conv-BN-ReLU + 1x1",
    "source": "CenterPoint (Yin et al. 2021) head on a 128-channel 32x32 BEV map (cropped), nuScenes-style single task group",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, cin, c, outs):
        super().__init__()
        self.shared = nn.Sequential(nn.Conv2d(cin, c, 3, padding=1, bias=False), _bn(c), nn.ReLU())
        self.heads = nn.ModuleList(
            nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), _bn(c), nn.ReLU(), nn.Conv2d(c, o, 1))
            for o in outs)

    def forward(self, x):
        y = self.shared(x)
        return tuple(h(y) for h in self.heads)


def get_inputs():
    return [torch.randn(1, 128, 32, 32)]


def get_init_inputs():
    return [128, 32, (3, 2, 1, 3, 2, 2)]
