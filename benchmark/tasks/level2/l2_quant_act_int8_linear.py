import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_quant_act_int8_linear",
    "level": 2,
    "domains": ["aiot"],
    "description": "Dynamic int8 activation quantisation (per-token absmax scale, round, clamp) then int8-weight linear, rescale",
    "source": "W8A8 (SmoothQuant-style) linear of an edge transformer (384 -> 1536), 16 tokens",
}


class Model(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.register_buffer("qweight", torch.randint(-127, 128, (n, k), dtype=torch.int8))
        self.register_buffer("wscale", torch.rand(n) * 0.004 + 0.001)

    def forward(self, x):
        s = x.abs().max(-1, keepdim=True).values.clamp(min=1e-5) / 127.0
        xq = torch.clamp(torch.round(x / s), -127, 127)
        acc = xq @ self.qweight.to(torch.float32).t()  # exact integer sums in fp32 (|acc| < 2^24)
        return acc * s * self.wscale


def get_inputs():
    return [torch.randn(1, 16, 384)]


def get_init_inputs():
    return [384, 1536]
