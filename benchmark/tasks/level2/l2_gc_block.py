import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_gc_block",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "GCNet",
    "description": "Global context block: 1x1 attention logits, softmax over positions, context = weighted sum, bottleneck 1x1-LN-ReLU-1x1, broadcast add",
    "source": "GCNet (Cao et al. 2019) in a ResNet stage 3 block (14x14x256, ratio 1/8)",
}


class Model(nn.Module):
    def __init__(self, c, r):
        super().__init__()
        self.mask = nn.Conv2d(c, 1, 1)
        self.t1 = nn.Conv2d(c, r, 1)
        self.ln = nn.LayerNorm([r, 1, 1])
        self.t2 = nn.Conv2d(r, c, 1)

    def forward(self, x):
        n, c, h, w = x.shape
        a = torch.softmax(self.mask(x).view(n, 1, h * w), dim=-1)
        ctx = torch.matmul(x.view(n, c, h * w), a.transpose(1, 2)).view(n, c, 1, 1)
        return x + self.t2(F.relu(self.ln(self.t1(ctx))))


def get_inputs():
    return [torch.randn(1, 256, 14, 14)]


def get_init_inputs():
    return [256, 32]
