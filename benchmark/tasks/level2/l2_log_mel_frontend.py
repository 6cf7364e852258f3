import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_log_mel_frontend",
    "level": 2,
    "domains": ["aiot", "mobile"],
    "description": "Audio front-end: power spectrum (re^2 + im^2), mel filterbank matmul, log(x + eps), per-utterance mean normalisation",
    "source": "KWS / ASR front-end: 98 frames of a 512-point FFT (257 bins) to 40 mel bands",
}


class Model(nn.Module):
    def __init__(self, bins, mels):
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.register_buffer("fbank", torch.rand(bins, mels, generator=g) * (torch.rand(bins, mels, generator=g) < 0.05))

    def forward(self, re, im):
        power = re * re + im * im
        mel = torch.log(power @ self.fbank + 1e-6)
        return mel - mel.mean(dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(1, 98, 257), torch.randn(1, 98, 257)]


def get_init_inputs():
    return [257, 40]
