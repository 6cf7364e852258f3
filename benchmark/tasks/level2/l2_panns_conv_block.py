import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_panns_conv_block",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "PANNs",
    "description": "Audio tagging conv block: two 3x3 conv-BN-ReLU, 2x2 average pool (1 -> 64 -> 64 channels on a log-mel map)",
    "source": "PANNs CNN10 (Kong et al. 2020) conv block 1 on a streaming chunk of 16 frames x 32 mel bins",
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
        self.net = nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), _bn(cout), nn.ReLU(),
                                 nn.Conv2d(cout, cout, 3, padding=1, bias=False), _bn(cout), nn.ReLU())

    def forward(self, x):
        return F.avg_pool2d(self.net(x), 2)


def get_inputs():
    return [torch.randn(1, 1, 16, 32)]


def get_init_inputs():
    return [1, 64]
