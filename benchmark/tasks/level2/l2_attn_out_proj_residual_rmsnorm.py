import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_attn_out_proj_residual_rmsnorm",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "Llama",
    "description": "Attention output projection 512 -> 512, residual add, then the next RMSNorm (eps 1e-5)",
    "source": "Llama-style decoder (d_model 512) o_proj + residual + post_attention_layernorm, 64-token prefill",
}


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.o = nn.Linear(d, d, bias=False)
        self.w = nn.Parameter(torch.rand(d) + 0.5)

    def forward(self, attn, resid):
        h = resid + self.o(attn)
        n = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5) * self.w
        return h, n


def get_inputs():
    return [torch.randn(1, 64, 512), torch.randn(1, 64, 512)]


def get_init_inputs():
    return [512]
