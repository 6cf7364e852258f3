import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_autoencoder_dense_block",
    "level": 2,
    "domains": ["aiot"],
    "family": "ToyADMOS AE",
    "description": "Dense autoencoder block: linear 640 -> 128, BN, ReLU, linear 128 -> 128, BN, ReLU",
    "source": "MLPerf Tiny anomaly detection autoencoder (ToyADMOS / DCASE 2020 baseline) encoder, 640-dim log-mel input",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, din, h):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(din, h), _bn(h, nn.BatchNorm1d), nn.ReLU(),
                                 nn.Linear(h, h), _bn(h, nn.BatchNorm1d), nn.ReLU())

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(1, 640)]


def get_init_inputs():
    return [640, 128]
