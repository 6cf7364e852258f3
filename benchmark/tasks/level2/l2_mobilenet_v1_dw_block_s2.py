import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_mobilenet_v1_dw_block_s2",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "MobileNetV1",
    "description": "MobileNetV1 block, stride 2: dw3x3 s2-BN-ReLU, 1x1 64->128-BN-ReLU",
    "source": "MobileNetV1 0.25 (Howard et al. 2017) for Visual Wake Words (MLPerf Tiny) at 96x96, block 2 (48x48 -> 24x24)",
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
        self.dw = nn.Sequential(nn.Conv2d(cin, cin, 3, 2, 1, groups=cin, bias=False), _bn(cin), nn.ReLU())
        self.pw = nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), _bn(cout), nn.ReLU())

    def forward(self, x):
        return self.pw(self.dw(x))


def get_inputs():
    return [torch.randn(1, 16, 48, 48)]


def get_init_inputs():
    return [16, 32]
