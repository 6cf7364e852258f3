import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_linear_ffn_up",
    "level": 1,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "Whisper",
    "description": "Linear 384 -> 1536 with bias over 32 tokens",
    "source": "Whisper-tiny encoder MLP fc1 on a 0.64 s streaming chunk (32 tokens)",
}


class Model(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.fc = nn.Linear(d, h)

    def forward(self, x):
        return self.fc(x)


def get_inputs():
    return [torch.randn(1, 32, 384)]


def get_init_inputs():
    return [384, 1536]
