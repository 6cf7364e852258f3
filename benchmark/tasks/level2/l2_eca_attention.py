import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_eca_attention",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "description": "ECA channel attention: global pool, 1D conv (k=5) across channels, sigmoid, rescale",
    "source": "ECA-Net on MobileNetV2 / ResNet stage (28x28x256)",
}


class Model(nn.Module):
    def __init__(self, k=5):
        super().__init__()
        self.conv = nn.Conv1d(1, 1, k, padding=k // 2, bias=False)

    def forward(self, x):
        y = x.mean((2, 3))[:, None, :]  # [B, 1, C]
        y = torch.sigmoid(self.conv(y))[:, 0, :, None, None]
        return x * y


def get_inputs():
    return [torch.randn(1, 256, 28, 28)]


def get_init_inputs():
    return [5]
