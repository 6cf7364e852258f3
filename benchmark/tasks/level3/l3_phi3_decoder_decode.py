import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_phi3_decoder_decode",
    "level": 3,
    "domains": ["aiot", "robotics"],
    "description": "Phi-3 decoder block, single-token decode at position 127 against a given KV cache of "
                   "127 positions; returns the hidden state and the updated K/V cache (GEMV-bound)",
    "source": "Phi-3-mini decoder layer (Abdin et al. 2024): fused qkv_proj and gate_up_proj, MHA with RoPE, SiLU-gated MLP; scaled to d_model 512, 8 heads of 64, FFN 1536",
}

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
        self.qkv_proj = nn.Linear(d, (nh + 2 * nkv) * hd, bias=False)
        self.gate_up_proj = nn.Linear(d, 2 * ff, bias=False)
        self.o_proj = nn.Linear(nh * hd, d, bias=False)
        self.down_proj = nn.Linear(ff, d, bias=False)
        cos, sin = rope_tables(max_pos, hd, 10000.0)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)

    def forward(self, x, past_k, past_v):
        b, t, _ = x.shape  # t == 1
        pos = past_k.shape[2]  # static: the cache length is part of the task's shape
        h = self.input_layernorm(x)
        q, k, v = self.qkv_proj(h).split([self.nh * self.hd, self.nkv * self.hd, self.nkv * self.hd], -1)
        q = q.view(b, t, self.nh, self.hd).transpose(1, 2)
        k = k.view(b, t, self.nkv, self.hd).transpose(1, 2)
        v = v.view(b, t, self.nkv, self.hd).transpose(1, 2)
        cos, sin = self.cos[pos:pos + t], self.sin[pos:pos + t]
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        new_k = torch.cat([past_k, k], 2)
        new_v = torch.cat([past_v, v], 2)
        k_att, v_att = new_k, new_v
        k_all, v_all = k_att, v_att
        att = torch.softmax(q @ k_all.transpose(-2, -1) * (self.hd ** -0.5), dim=-1)
        y = (att @ v_all).transpose(1, 2).reshape(b, t, self.nh * self.hd)
        x = x + self.o_proj(y)
        h = self.post_attention_layernorm(x)
        gate, up = self.gate_up_proj(h).chunk(2, -1)
        out = x + self.down_proj(F.silu(gate) * up)
        return out, new_k, new_v


def get_inputs():
    return [torch.randn(1, 1, 512), torch.randn(1, 8, 127, 64), torch.randn(1, 8, 127, 64)]


def get_init_inputs():
    return [512, 8, 8, 1536, 256]
