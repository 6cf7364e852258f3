import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_dequantize_int4_unpack",
    "level": 1,
    "domains": ["aiot", "mobile"],
    "description": "int4 unpack + dequantise: two nibbles per uint8, zero point 8, group-wise scales (group 32)",
    "source": "GPTQ / AWQ-style 4-bit weights of an edge LM (1024 x 512, groups of 32)",
}


class Model(nn.Module):
    def __init__(self, n, k, group):
        super().__init__()
        self.n, self.k, self.group = n, k, group
        self.register_buffer("scale", torch.rand(n, k // group, 1) * 0.02 + 0.005)

    def forward(self, packed):
        p = packed.to(torch.int32)
        # nibbles by // and %: TVM 0.27's importer has no aten.bitwise_right_shift
        lo, hi = p % 16, p // 16
        q = torch.stack([lo, hi], -1).reshape(self.n, self.k // self.group, self.group)
        return ((q - 8).to(torch.float32) * self.scale).reshape(self.n, self.k)


def get_inputs():
    return [torch.randint(0, 256, (1024, 256), dtype=torch.uint8)]


def get_init_inputs():
    return [1024, 512, 32]
