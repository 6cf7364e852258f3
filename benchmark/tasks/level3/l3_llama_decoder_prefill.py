import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_llama_decoder_prefill",
    "level": 3,
    "domains": ["mobile", "robotics"],
    "description": "Llama decoder block, prefill of 64 tokens (causal mask), RoPE, "
                   "RMSNorm, SwiGLU-style MLP",
    "source": "Llama-2 decoder layer (Touvron et al. 2023): RMSNorm, MHA with RoPE, SwiGLU MLP; scaled to d_model 512, 8 heads of 64, FFN 1536",
}

NEG = -1e9

class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rope_tables(max_pos, hd, theta):
    inv = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
    ang = torch.outer(torch.arange(max_pos, dtype=torch.float32), inv)
    emb = torch.cat([ang, ang], -1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], -1)


def apply_rope(x, cos, sin):
    # HF-style rotary embedding on [B, H, T, hd] with [T, hd] tables
    return x * cos + rotate_half(x) * sin


class Model(nn.Module):
    def __init__(self, d=512, nh=8, nkv=8, ff=1536, max_pos=256):
        super().__init__()
        hd = d // nh
        self.nh, self.nkv, self.hd = nh, nkv, hd
        self.input_layernorm = RMSNorm(d, 1e-05)
        self.post_attention_layernorm = RMSNorm(d, 1e-05)
        self.q_proj = nn.Linear(d, nh * hd, bias=False)
        self.k_proj = nn.Linear(d, nkv * hd, bias=False)
        self.v_proj = nn.Linear(d, nkv * hd, bias=False)
        self.gate_proj = nn.Linear(d, ff, bias=False)
        self.up_proj = nn.Linear(d, ff, bias=False)
        self.o_proj = nn.Linear(nh * hd, d, bias=False)
        self.down_proj = nn.Linear(ff, d, bias=False)
        cos, sin = rope_tables(max_pos, hd, 10000.0)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)

    def forward(self, x):
        b, t, _ = x.shape
        h = self.input_layernorm(x)
        q, k, v = self.q_proj(h), self.k_proj(h), self.v_proj(h)
        q = q.view(b, t, self.nh, self.hd).transpose(1, 2)
        k = k.view(b, t, self.nkv, self.hd).transpose(1, 2)
        v = v.view(b, t, self.nkv, self.hd).transpose(1, 2)
        cos, sin = self.cos[:t], self.sin[:t]
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        mask = torch.triu(torch.full((t, t), NEG, device=x.device), 1)
        att = torch.softmax(q @ k.transpose(-2, -1) * (self.hd ** -0.5) + mask, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, self.nh * self.hd)
        x = x + self.o_proj(y)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


def get_inputs():
    return [torch.randn(1, 64, 512)]


def get_init_inputs():
    return [512, 8, 8, 1536, 256]
