import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_gqa_decode_kv_cache",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "Qwen2",
    "description": "One decode step of GQA attention: 8 query heads against a 255-entry cache of 2 KV heads (appended with the new key / value), softmax, weighted sum",
    "source": "Qwen2-0.5B-style GQA 4:1 decode (scaled: 8 heads / 2 KV heads of 64) at context 256",
}


class Model(nn.Module):
    def forward(self, q, k_new, v_new, k_cache, v_cache):
        k = torch.cat([k_cache, k_new], dim=2).repeat_interleave(4, dim=1)
        v = torch.cat([v_cache, v_new], dim=2).repeat_interleave(4, dim=1)
        p = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * q.shape[-1] ** -0.5, -1)
        return torch.matmul(p, v)


def get_inputs():
    return [torch.randn(1, 8, 1, 64), torch.randn(1, 2, 1, 64), torch.randn(1, 2, 1, 64), torch.randn(1, 2, 255, 64), torch.randn(1, 2, 255, 64)]


def get_init_inputs():
    return []
