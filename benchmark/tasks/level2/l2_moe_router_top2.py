import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_moe_router_top2",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "Mixtral",
    "description": "Mixture-of-experts router: linear 512 -> 8 experts, softmax, top-2 weights renormalised, and their expert indices",
    "source": "Mixtral-8x7B router (Jiang et al. 2024) scaled to d_model 512, 64 tokens",
}


class Model(nn.Module):
    def __init__(self, d, e):
        super().__init__()
        self.gate = nn.Linear(d, e, bias=False)

    def forward(self, x):
        p = torch.softmax(self.gate(x), dim=-1)
        w, idx = torch.topk(p, 2, dim=-1)
        return w / w.sum(-1, keepdim=True), idx


def get_inputs():
    return [torch.randn(1, 64, 512)]


def get_init_inputs():
    return [512, 8]
