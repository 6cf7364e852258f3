import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_sliding_window_attention",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "Mistral",
    "description": "Causal attention with a sliding window of 16 tokens (finite -1e9 outside), 8 heads of 64, on given q / k / v",
    "source": "Mistral-7B sliding-window attention (Jiang et al. 2023), window scaled to 16, 96-token prefill, 8 heads of 64",
}


class Model(nn.Module):
    def __init__(self, t, window):
        super().__init__()
        i = torch.arange(t)
        keep = (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < window)
        self.register_buffer("bias", torch.where(keep, 0.0, -1e9))

    def forward(self, q, k, v):
        s = torch.matmul(q, k.transpose(-1, -2)) * q.shape[-1] ** -0.5 + self.bias
        return torch.matmul(torch.softmax(s, -1), v)


def get_inputs():
    return [torch.randn(1, 8, 96, 64), torch.randn(1, 8, 96, 64), torch.randn(1, 8, 96, 64)]


def get_init_inputs():
    return [96, 16]
