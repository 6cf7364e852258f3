import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_lm_head_logsoftmax",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "description": "Final RMSNorm + LM head (8192-entry vocab) + log-softmax for one decode token",
    "source": "Small on-device LM output layer (d_model 512, vocab 8192)",
}


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class Model(nn.Module):
    def __init__(self, d, vocab):
        super().__init__()
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, x):
        return F.log_softmax(self.head(self.norm(x)), -1)


def get_inputs():
    return [torch.randn(1, 1, 512)]


def get_init_inputs():
    return [512, 8192]
