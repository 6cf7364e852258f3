import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_dequant_int8_gemv",
    "level": 2,
    "domains": ["aiot", "mobile", "robotics"],
    "description": "Weight-only int8 GEMV for decode: y = x @ (q * s)^T, one token, 1024 -> 2048",
    "source": "W8A32 decode projection of a ~0.5B edge LM (d 1024, 2048 out)",
}


class Model(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.register_buffer("qweight", torch.randint(-128, 128, (n, k), dtype=torch.int8))
        self.register_buffer("scale", torch.rand(n, 1) * 0.004 + 0.001)

    def forward(self, x):
        return x @ (self.qweight.to(torch.float32) * self.scale).t()


def get_inputs():
    return [torch.randn(1, 1024)]


def get_init_inputs():
    return [1024, 2048]
