import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_alibi_attention",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "BLOOM",
    "description": "Causal attention with ALiBi linear position biases (head slopes 2^-(8h/H)), 8 heads of 64",
    "source": "ALiBi (Press et al. 2022) as in BLOOM / MPT decoders, scaled to 8 heads of 64, 64-token prefill",
}


class Model(nn.Module):
    def __init__(self, h, t):
        super().__init__()
        slopes = torch.tensor([2.0 ** (-8.0 * (i + 1) / h) for i in range(h)])
        i = torch.arange(t)
        dist = (i[None, :] - i[:, None]).float()
        bias = slopes[:, None, None] * dist[None]
        self.register_buffer("bias", torch.where(dist[None] <= 0, bias, torch.full_like(bias, -1e9)))

    def forward(self, q, k, v):
        s = torch.matmul(q, k.transpose(-1, -2)) * q.shape[-1] ** -0.5 + self.bias
        return torch.matmul(torch.softmax(s, -1), v)


def get_inputs():
    return [torch.randn(1, 8, 64, 64), torch.randn(1, 8, 64, 64), torch.randn(1, 8, 64, 64)]


def get_init_inputs():
    return [8, 64]
