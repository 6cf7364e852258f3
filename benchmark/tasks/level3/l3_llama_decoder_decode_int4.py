import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_llama_decoder_decode_int4",
    "level": 3,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "Llama",
    "description": "Llama decoder block with 4-bit weight-only quantised projections (groups of 32, scale and min per group, unpacked every call), single-token decode at position 127 against a 127-entry KV cache",
    "source": "Llama-2 decoder layer (Touvron et al. 2023) as on-device runtimes run it (llama.cpp Q4_1-style weights); scaled to d_model 512, 8 heads of 64, FFN 1536",
}


class Q4Linear(nn.Module):
    def __init__(self, din, dout, g=32):
        super().__init__()
        self.g = g
        self.register_buffer("packed", torch.randint(0, 256, (dout, din // 2), dtype=torch.uint8))
        self.register_buffer("scale", torch.rand(dout, din // g) * 0.01 + 0.002)
        # centred as a quantiser makes them: min = -8 scale (the codes 0..15 span about [-8, 7] scales)
        self.register_buffer("minv", -8 * self.scale * (1 + 0.05 * torch.randn(dout, din // g)))

    def forward(self, x):
        p = self.packed.to(torch.int32)
        q = torch.stack([p & 15, torch.bitwise_right_shift(p, 4)], dim=-1).reshape(p.shape[0], -1).float()
        w = (q.view(q.shape[0], -1, self.g) * self.scale.unsqueeze(-1) + self.minv.unsqueeze(-1)).reshape(q.shape[0], -1)
        return torch.matmul(x, w.t())


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def apply_rope(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin


class Model(nn.Module):
    def __init__(self, d=512, nh=8, ff=1536, max_pos=256):
        super().__init__()
        hd = d // nh
        self.nh, self.hd = nh, hd
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(d), RMSNorm(d)
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (Q4Linear(d, d) for _ in range(4))
        self.gate_proj, self.up_proj = Q4Linear(d, ff), Q4Linear(d, ff)
        self.down_proj = Q4Linear(ff, d)
        inv = 1.0 / 10000.0 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
        ang = torch.outer(torch.arange(max_pos, dtype=torch.float32), inv)
        self.register_buffer("cos", torch.cat([ang, ang], -1).cos())
        self.register_buffer("sin", torch.cat([ang, ang], -1).sin())

    def forward(self, x, past_k, past_v):
        b, t, _ = x.shape
        pos = past_k.shape[2]
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, t, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(b, t, self.nh, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(b, t, self.nh, self.hd).transpose(1, 2)
        cos, sin = self.cos[pos:pos + t], self.sin[pos:pos + t]
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        k, v = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
        a = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * self.hd ** -0.5, dim=-1)
        x = x + self.o_proj(torch.matmul(a, v).transpose(1, 2).reshape(b, t, -1))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h)), k, v


def get_inputs():
    return [torch.randn(1, 1, 512), torch.randn(1, 8, 127, 64), torch.randn(1, 8, 127, 64)]


def get_init_inputs():
    return [512, 8, 1536, 256]
