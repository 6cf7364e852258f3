import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_cross_attention",
    "level": 2,
    "domains": ["robotics"],
    "description": "Cross-attention: 50 object queries attend over 300 encoder tokens (q from queries, k/v from memory), 4 heads",
    "source": "DETR-lite / RT-DETR-style decoder cross-attention at d 128 (300 memory tokens)",
}


class Model(nn.Module):
    def __init__(self, d, nh):
        super().__init__()
        self.nh, self.hd = nh, d // nh
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, 2 * d)
        self.o = nn.Linear(d, d)

    def forward(self, queries, memory):
        b, nq, d = queries.shape
        q = self.q(queries).view(b, nq, self.nh, self.hd).transpose(1, 2)
        k, v = self.kv(memory).view(b, -1, 2, self.nh, self.hd).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-2, -1) * self.hd ** -0.5, -1)
        return self.o((att @ v).transpose(1, 2).reshape(b, nq, d))


def get_inputs():
    return [torch.randn(1, 50, 128), torch.randn(1, 300, 128)]


def get_init_inputs():
    return [128, 4]
