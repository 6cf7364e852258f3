import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_gemma_decoder_prefill",
    "level": 3,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "Gemma",
    "description": "Gemma decoder block, 32-token prefill: embedding scaled by sqrt(d), RMSNorm (1 + w), multi-query attention with RoPE and a causal mask, GeGLU MLP; returns the hidden state and the K/V cache",
    "source": "Gemma-2B decoder layer (Gemma team 2024): MQA (1 KV head), GeGLU, RMSNorm offset; scaled to d_model 512, 8 heads of 64, FFN 2048",
}


class RMSNorm(nn.Module):
    """Gemma's RMSNorm: weight stored as an offset from 1."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * (1 + self.weight)


def rope_tables(max_pos, hd, theta):
    inv = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
    ang = torch.outer(torch.arange(max_pos, dtype=torch.float32), inv)
    emb = torch.cat([ang, ang], -1)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin


class Block(nn.Module):
    """Gemma decoder layer: RMSNorm, multi-query attention (one KV head) with RoPE, GeGLU MLP (tanh GELU)."""

    def __init__(self, d, nh, hd, ff, max_pos):
        super().__init__()
        self.nh, self.hd = nh, hd
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(d), RMSNorm(d)
        self.q_proj = nn.Linear(d, nh * hd, bias=False)
        self.k_proj = nn.Linear(d, hd, bias=False)
        self.v_proj = nn.Linear(d, hd, bias=False)
        self.o_proj = nn.Linear(nh * hd, d, bias=False)
        self.gate_proj = nn.Linear(d, ff, bias=False)
        self.up_proj = nn.Linear(d, ff, bias=False)
        self.down_proj = nn.Linear(ff, d, bias=False)
        cos, sin = rope_tables(max_pos, hd, 10000.0)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)

    def attend(self, x, pos, past_k=None, past_v=None):
        b, t, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, t, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(b, t, 1, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(b, t, 1, self.hd).transpose(1, 2)
        cos, sin = self.cos[pos:pos + t], self.sin[pos:pos + t]
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if past_k is not None:
            k, v = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
        s = torch.matmul(q, k.transpose(-1, -2)) * self.hd ** -0.5
        if t > 1:
            s = s.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), -1e9)
        y = torch.matmul(torch.softmax(s, -1), v).transpose(1, 2).reshape(b, t, -1)
        x = x + self.o_proj(y)
        h = self.post_attention_layernorm(x)
        x = x + self.down_proj(F.gelu(self.gate_proj(h), approximate="tanh") * self.up_proj(h))
        return x, k, v


class Model(nn.Module):
    def __init__(self, d=512, nh=8, ff=2048, max_pos=256):
        super().__init__()
        self.d = d
        self.block = Block(d, nh, d // nh, ff, max_pos)

    def forward(self, x):
        return self.block.attend(x * self.d ** 0.5, 0)


def get_inputs():
    return [torch.randn(1, 32, 512) * 0.05]


def get_init_inputs():
    return [512, 8, 2048, 256]
