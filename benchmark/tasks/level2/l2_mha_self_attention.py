import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_mha_self_attention",
    "level": 2,
    "domains": ["mobile", "robotics"],
    "description": "Multi-head self-attention: fused qkv Linear, scaled dot-product softmax, output Linear (no mask)",
    "source": "DeiT-tiny attention at 128x128 input (65 tokens, d 192, 3 heads)",
}


class Model(nn.Module):
    def __init__(self, d, nh):
        super().__init__()
        self.nh, self.hd = nh, d // nh
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.nh, self.hd).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-2, -1) * self.hd ** -0.5, -1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, d))


def get_inputs():
    return [torch.randn(1, 65, 192)]


def get_init_inputs():
    return [192, 3]
