import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_quantize_int8",
    "level": 1,
    "domains": ["aiot", "mobile"],
    "description": "Per-tensor affine quantisation to int8: clamp(round(x / s) + z, -128, 127)",
    "source": "TFLite / PyTorch static int8 activation quantisation (28x28x64 activation)",
}


class Model(nn.Module):
    def __init__(self, scale, zero_point):
        super().__init__()
        self.scale = scale
        self.zp = zero_point

    def forward(self, x):
        q = torch.clamp(torch.round(x / self.scale) + self.zp, -128, 127)
        return q.to(torch.int8)


def get_inputs():
    return [torch.randn(1, 64, 28, 28) * 2]


def get_init_inputs():
    return [0.0325, 3]
