import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_lora_linear",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "LoRA",
    "description": "LoRA-adapted linear: base 512 -> 512 plus scaled low-rank update x A^T B^T (rank 8, alpha 16)",
    "source": "LoRA (Hu et al. 2022) on the q_proj of a d_model 512 decoder, on-device personalisation, 32 tokens",
}


class Model(nn.Module):
    def __init__(self, d, r, alpha):
        super().__init__()
        self.base = nn.Linear(d, d, bias=False)
        self.a = nn.Linear(d, r, bias=False)
        self.b = nn.Linear(r, d, bias=False)
        nn.init.normal_(self.b.weight, std=0.02)
        self.scale = alpha / r

    def forward(self, x):
        return self.base(x) + self.b(self.a(x)) * self.scale


def get_inputs():
    return [torch.randn(1, 32, 512)]


def get_init_inputs():
    return [512, 8, 16]
