import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_moe_top2_dense_experts",
    "level": 2,
    "domains": ["mobile", "robotics"],
    "family": "Mixtral",
    "description": "Top-2 mixture of 4 SwiGLU experts (512 -> 256 -> 512) computed densely and combined with routing weights (zero for unrouted experts)",
    "source": "Mixtral-style sparse MoE layer scaled to 4 experts of FFN 256 on d_model 512, 8 tokens (dense evaluation as on-device runtimes do at batch 1)",
}


class Model(nn.Module):
    def __init__(self, d, f, e):
        super().__init__()
        self.gate = nn.Linear(d, e, bias=False)
        self.w1 = nn.Parameter(torch.randn(e, d, f) * d ** -0.5)
        self.w3 = nn.Parameter(torch.randn(e, d, f) * d ** -0.5)
        self.w2 = nn.Parameter(torch.randn(e, f, d) * f ** -0.5)

    def forward(self, x):
        p = torch.softmax(self.gate(x), dim=-1)
        top, _ = torch.topk(p, 2, dim=-1)
        w = torch.where(p >= top[..., 1:2], p, torch.zeros_like(p))
        w = w / w.sum(-1, keepdim=True)
        xe = x.unsqueeze(1)
        h = F.silu(torch.matmul(xe, self.w1)) * torch.matmul(xe, self.w3)
        y = torch.matmul(h, self.w2)
        return (y * w.permute(0, 2, 1).unsqueeze(-1)).sum(1)


def get_inputs():
    return [torch.randn(1, 8, 512)]


def get_init_inputs():
    return [512, 256, 4]
