import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_sampling_temperature_topk",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "Decoding",
    "description": "Next-token sampling head: logits / temperature 0.7, top-40 filter (finite -1e9 elsewhere), softmax",
    "source": "Top-k sampling (Fan et al. 2018) as on-device LLM runtimes apply it, 8000-token vocabulary, one decode step",
}


class Model(nn.Module):
    def __init__(self, k, temp):
        super().__init__()
        self.k, self.temp = k, temp

    def forward(self, logits):
        z = logits / self.temp
        kth = torch.topk(z, self.k, dim=-1)[0][..., -1:]
        return torch.softmax(torch.where(z >= kth, z, torch.full_like(z, -1e9)), dim=-1)


def get_inputs():
    return [torch.randn(1, 8000) * 3]


def get_init_inputs():
    return [40, 0.7]
