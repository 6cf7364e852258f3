import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_dequant_int8_linear",
    "level": 2,
    "domains": ["aiot", "mobile"],
    "description": "Weight-only int8 linear: per-output-channel dequantisation of int8 weights fused into the matmul (+ bias)",
    "source": "W8A32 linear of an edge LM MLP (512 -> 1536), 16 tokens",
}


class Model(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.register_buffer("qweight", torch.randint(-128, 128, (n, k), dtype=torch.int8))
        self.register_buffer("scale", torch.rand(n) * 0.004 + 0.001)
        self.bias = nn.Parameter(torch.randn(n) * 0.1)

    def forward(self, x):
        w = self.qweight.to(torch.float32) * self.scale[:, None]
        return F.linear(x, w, self.bias)


def get_inputs():
    return [torch.randn(1, 16, 512)]


def get_init_inputs():
    return [512, 1536]
