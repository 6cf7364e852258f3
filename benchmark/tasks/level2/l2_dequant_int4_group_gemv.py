import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_dequant_int4_group_gemv",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "llama.cpp Q4",
    "description": "Decode-step GEMV with 4-bit weights in groups of 32 (two nibbles a byte, fp32 scale and min per group): unpack, dequantise, matvec 512 -> 1536",
    "source": "Q4_1-style group quantisation (llama.cpp) of a 512 -> 1536 MLP projection, one decode token",
}


class Model(nn.Module):
    def __init__(self, din, dout, g):
        super().__init__()
        self.g = g
        self.register_buffer("packed", torch.randint(0, 256, (dout, din // 2), dtype=torch.uint8))
        self.register_buffer("scale", torch.rand(dout, din // g) * 0.02 + 0.005)
        # centred as a quantiser makes them: min = -8 scale (the codes 0..15 span about [-8, 7] scales)
        self.register_buffer("minv", -8 * self.scale * (1 + 0.05 * torch.randn(dout, din // g)))

    def forward(self, x):
        p = self.packed.to(torch.int32)
        q = torch.stack([p & 15, torch.bitwise_right_shift(p, 4)], dim=-1).reshape(p.shape[0], -1).float()
        q = q.view(q.shape[0], -1, self.g) * self.scale.unsqueeze(-1) + self.minv.unsqueeze(-1)
        return torch.matmul(x, q.reshape(q.shape[0], -1).t())


def get_inputs():
    return [torch.randn(1, 1, 512)]


def get_init_inputs():
    return [512, 1536, 32]
