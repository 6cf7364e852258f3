import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_repeat_kv_heads",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "Qwen2",
    "description": "GQA key/value head expansion: 2 KV heads repeated to 8 (repeat_interleave on dim 1)",
    "source": "Qwen2-0.5B-style GQA 4:1 (scaled: 2 KV heads of 64) over a 128-entry KV cache",
}


class Model(nn.Module):
    def forward(self, k):
        return torch.repeat_interleave(k, 4, dim=1)


def get_inputs():
    return [torch.randn(1, 2, 128, 64)]


def get_init_inputs():
    return []
