import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_conv_stft_magnitude",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "Conv-STFT",
    "description": "STFT as a strided conv1d with a Hann-windowed DFT basis (n_fft 256, hop 128): real and imaginary parts, magnitude",
    "source": "Conv-STFT front end of on-device speech enhancement (e.g. DCCRN, Hu et al. 2020), 1 s at 16 kHz",
}


class Model(nn.Module):
    def __init__(self, n_fft, hop):
        super().__init__()
        self.hop = hop
        n = torch.arange(n_fft).float()
        k = torch.arange(n_fft // 2 + 1).float()[:, None]
        win = 0.5 - 0.5 * torch.cos(2 * torch.pi * n / n_fft)
        ang = 2 * torch.pi * k * n / n_fft
        self.register_buffer("basis", torch.cat([torch.cos(ang) * win, -torch.sin(ang) * win]).unsqueeze(1))

    def forward(self, wav):
        spec = F.conv1d(wav, self.basis, stride=self.hop)
        re, im = spec.chunk(2, dim=1)
        return torch.sqrt(re * re + im * im + 1e-9)


def get_inputs():
    return [torch.randn(1, 1, 16000) * 0.1]


def get_init_inputs():
    return [256, 128]
