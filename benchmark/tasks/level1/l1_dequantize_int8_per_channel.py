import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_dequantize_int8_per_channel",
    "level": 1,
    "domains": ["aiot", "mobile"],
    "description": "Per-channel int8 weight dequantisation: (w - 0) * scale[c] (fp32 out)",
    "source": "int8 weight-only quantised linear of an edge LM (1536 x 512, per-output-channel scales)",
}


class Model(nn.Module):
    def __init__(self, n, k):
        super().__init__()
        self.register_buffer("scale", torch.rand(n, 1) * 0.02 + 0.005)

    def forward(self, q):
        return q.to(torch.float32) * self.scale


def get_inputs():
    return [torch.randint(-128, 128, (1536, 512), dtype=torch.int8)]


def get_init_inputs():
    return [1536, 512]
