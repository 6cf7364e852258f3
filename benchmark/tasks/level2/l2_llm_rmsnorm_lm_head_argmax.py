import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_llm_rmsnorm_lm_head_argmax",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "Llama",
    "description": "Final RMSNorm, LM head 512 -> 8000, greedy next token (argmax) and its log-probability",
    "source": "Llama-style small on-device LM (d_model 512, 8000-token vocabulary), greedy decode step",
}


class Model(nn.Module):
    def __init__(self, d, v):
        super().__init__()
        self.w = nn.Parameter(torch.rand(d) + 0.5)
        self.head = nn.Linear(d, v, bias=False)

    def forward(self, x):
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.w
        lp = F.log_softmax(self.head(h), dim=-1)
        best = lp.argmax(-1)
        return best, lp.amax(-1)


def get_inputs():
    return [torch.randn(1, 1, 512)]


def get_init_inputs():
    return [512, 8000]
