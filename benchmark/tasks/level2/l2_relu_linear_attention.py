import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_relu_linear_attention",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "EfficientViT",
    "description": "ReLU linear attention: q, k = ReLU(proj), out = q (k^T v) / (q k^T 1), 4 heads of 16 over 256 tokens",
    "source": "EfficientViT-B0 (Cai et al. 2023) lightweight multi-scale attention at 1/16 of a 256x256 frame (16x16 tokens, 64 channels)",
}


class Model(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4).unbind(0)
        q, k = F.relu(q), F.relu(k)
        kv = torch.matmul(k.transpose(-1, -2), v)
        num = torch.matmul(q, kv)
        den = torch.matmul(q, k.sum(2, keepdim=True).transpose(-1, -2)) + 1e-6
        return self.o((num / den).transpose(1, 2).reshape(b, t, d))


def get_inputs():
    return [torch.randn(1, 256, 64)]


def get_init_inputs():
    return [64, 4]
