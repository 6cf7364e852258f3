import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_har_cnn_block",
    "level": 2,
    "domains": ["aiot"],
    "family": "HAR-CNN",
    "description": "1-D conv block for activity recognition: conv1d k5 9->64, BN, ReLU, conv1d k5 64->64, BN, ReLU, max pool 2",
    "source": "1-D CNN on UCI-HAR (9 inertial channels x 128 samples, Ronao & Cho 2016 style) first block",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, cin, c):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(cin, c, 5, padding=2, bias=False), _bn(c, nn.BatchNorm1d), nn.ReLU(),
                                 nn.Conv1d(c, c, 5, padding=2, bias=False), _bn(c, nn.BatchNorm1d), nn.ReLU(),
                                 nn.MaxPool1d(2))

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(1, 9, 128)]


def get_init_inputs():
    return [9, 64]
