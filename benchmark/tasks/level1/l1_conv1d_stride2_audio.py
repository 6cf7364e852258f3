import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv1d_stride2_audio",
    "level": 1,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "Whisper",
    "description": "1-D conv, kernel 3, stride 2, pad 1, 384 -> 384 channels over 300 frames",
    "source": "Whisper-tiny encoder conv2 on 3 s of audio (300 mel frames -> 150)",
}


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv1d(c, c, 3, stride=2, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 384, 300)]


def get_init_inputs():
    return [384]
