import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_vit_encoder_block",
    "level": 2,
    "domains": ["mobile"],
    "description": "Pre-LN ViT encoder block: LN, MHA (3 heads), residual, LN, MLP 4x with GELU, residual",
    "source": "DeiT-tiny block at 128x128 input (65 tokens, d 192)",
}


class Model(nn.Module):
    def __init__(self, d, nh):
        super().__init__()
        self.nh, self.hd = nh, d // nh
        self.n1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.n2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, t, 3, self.nh, self.hd).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-2, -1) * self.hd ** -0.5, -1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.n2(x))))


def get_inputs():
    return [torch.randn(1, 65, 192)]


def get_init_inputs():
    return [192, 3]
