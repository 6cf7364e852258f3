import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_toyadmos_autoencoder",
    "level": 3,
    "domains": ["robotics", "aiot"],
    "family": "ToyADMOS AE",
    "description": "Dense autoencoder for machine-sound anomaly detection: 640 -> 4 x (128, BN, ReLU) -> 8 -> 4 x (128, BN, ReLU) -> 640, and the reconstruction error",
    "source": "MLPerf Tiny anomaly detection reference (DCASE 2020 task 2 baseline autoencoder on ToyADMOS, 5 frames x 128 mel)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


def _dense(din, dout):
    return nn.Sequential(nn.Linear(din, dout), _bn(dout, nn.BatchNorm1d), nn.ReLU())


class Model(nn.Module):
    def __init__(self, din, h, z):
        super().__init__()
        enc = [_dense(din, h), _dense(h, h), _dense(h, h), _dense(h, h), _dense(h, z)]
        dec = [_dense(z, h), _dense(h, h), _dense(h, h), _dense(h, h)]
        self.net = nn.Sequential(*enc, *dec, nn.Linear(h, din))

    def forward(self, x):
        y = self.net(x)
        return y, ((y - x) ** 2).mean(-1)


def get_inputs():
    return [torch.randn(1, 640)]


def get_init_inputs():
    return [640, 128, 8]
