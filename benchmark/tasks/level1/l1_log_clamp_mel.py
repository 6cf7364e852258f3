import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_log_clamp_mel",
    "level": 1,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "Whisper",
    "description": "log10 of a power spectrogram clamped at 1e-10 (80 mel bins x 300 frames)",
    "source": "Whisper log-mel spectrogram (log10(clamp(mel, 1e-10))) on 3 s of audio",
}


class Model(nn.Module):
    def forward(self, x):
        return torch.log10(torch.clamp(x, min=1e-10))


def get_inputs():
    return [torch.rand(1, 80, 300) * 10]


def get_init_inputs():
    return []
