import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_fake_quant_per_tensor",
    "level": 1,
    "domains": ["aiot"],
    "description": "Fake quantisation (quantise-dequantise) of activations to uint8 range",
    "source": "QAT-exported MobileNet activation (14x14x96), scale 0.05, zero point 128",
}


class Model(nn.Module):
    def __init__(self, scale, zero_point):
        super().__init__()
        self.scale = scale
        self.zp = zero_point

    def forward(self, x):
        q = torch.clamp(torch.round(x / self.scale) + self.zp, 0, 255)
        return (q - self.zp) * self.scale


def get_inputs():
    return [torch.randn(1, 96, 14, 14) * 3]


def get_init_inputs():
    return [0.05, 128]
