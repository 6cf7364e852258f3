import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_mfcc_dct",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "KWS",
    "description": "MFCC from a power mel spectrogram: log(mel + 1e-6), DCT-II (orthonormal) to 10 coefficients over 40 mel bins, 49 frames",
    "source": "DS-CNN keyword spotting front end (Zhang et al. 2017, MLPerf Tiny KWS): 49 x 40 log-mel -> 49 x 10 MFCC",
}


class Model(nn.Module):
    def __init__(self, n_mels, n_mfcc):
        super().__init__()
        n = torch.arange(n_mels).float()
        k = torch.arange(n_mfcc).float()[:, None]
        dct = torch.cos(torch.pi / n_mels * (n + 0.5) * k) * (2.0 / n_mels) ** 0.5
        dct[0] *= 0.5 ** 0.5
        self.register_buffer("dct", dct.t())

    def forward(self, mel):
        return torch.matmul(torch.log(mel + 1e-6), self.dct)


def get_inputs():
    return [torch.rand(1, 49, 40) * 5]


def get_init_inputs():
    return [40, 10]
