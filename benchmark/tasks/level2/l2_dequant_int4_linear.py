import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_dequant_int4_linear",
    "level": 2,
    "domains": ["aiot", "mobile"],
    "description": "Weight-only int4 linear: unpack two nibbles per uint8, subtract zero point 8, group-wise scales (32), matmul",
    "source": "W4A32 (GPTQ/AWQ-style) projection of an edge LM (512 -> 1024), 8 tokens",
}


class Model(nn.Module):
    def __init__(self, k, n, group):
        super().__init__()
        self.k, self.n, self.group = k, n, group
        self.register_buffer("packed", torch.randint(0, 256, (n, k // 2), dtype=torch.uint8))
        self.register_buffer("scale", torch.rand(n, k // group, 1) * 0.02 + 0.005)

    def forward(self, x):
        p = self.packed.to(torch.int32)
        lo, hi = p % 16, p // 16  # TVM 0.27's importer has no aten.bitwise_right_shift
        q = torch.stack([lo, hi], -1).reshape(self.n, self.k // self.group, self.group)
        w = ((q - 8).to(torch.float32) * self.scale).reshape(self.n, self.k)
        return x @ w.t()


def get_inputs():
    return [torch.randn(1, 8, 512)]


def get_init_inputs():
    return [512, 1024, 32]
