import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_gqa_causal_attention",
    "level": 2,
    "domains": ["mobile", "robotics"],
    "description": "Grouped-query attention, causal: q/k/v projections (8 query, 2 KV heads), repeat KV, masked softmax, o_proj",
    "source": "Qwen2 / Llama-3 style GQA at d_model 512, 64-token prefill",
}


class Model(nn.Module):
    def __init__(self, d, nh, nkv):
        super().__init__()
        self.nh, self.nkv, self.hd = nh, nkv, d // nh
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, nkv * self.hd, bias=False)
        self.v = nn.Linear(d, nkv * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        q = self.q(x).view(b, t, self.nh, self.hd).transpose(1, 2)
        k = self.k(x).view(b, t, self.nkv, self.hd).transpose(1, 2).repeat_interleave(self.nh // self.nkv, 1)
        v = self.v(x).view(b, t, self.nkv, self.hd).transpose(1, 2).repeat_interleave(self.nh // self.nkv, 1)
        mask = torch.triu(torch.full((t, t), -1e9), 1)  # finite: -inf breaks TVM's LegalizeOps
        att = torch.softmax(q @ k.transpose(-2, -1) * self.hd ** -0.5 + mask, -1)
        return self.o((att @ v).transpose(1, 2).reshape(b, t, d))


def get_inputs():
    return [torch.randn(1, 64, 512)]


def get_init_inputs():
    return [512, 8, 2]
