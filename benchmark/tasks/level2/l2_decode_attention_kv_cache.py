import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_decode_attention_kv_cache",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "description": "Decode attention core: append the new K/V to a 127-entry cache, GQA (8 q / 2 kv heads), softmax over 128 positions",
    "source": "Qwen2-0.5B-style decode step at d_model 512 (head dim 64), position 127",
}


class Model(nn.Module):
    def __init__(self, nh, nkv):
        super().__init__()
        self.rep = nh // nkv

    def forward(self, q, k_new, v_new, k_cache, v_cache):
        k = torch.cat([k_cache, k_new], 2).repeat_interleave(self.rep, 1)
        v = torch.cat([v_cache, v_new], 2).repeat_interleave(self.rep, 1)
        att = torch.softmax(q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5, -1)
        return att @ v


def get_inputs():
    return [torch.randn(1, 8, 1, 64), torch.randn(1, 2, 1, 64), torch.randn(1, 2, 1, 64), torch.randn(1, 2, 127, 64), torch.randn(1, 2, 127, 64)]


def get_init_inputs():
    return [8, 2]
