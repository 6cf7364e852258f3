import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_convnext_stage",
    "level": 3,
    "domains": ["mobile", "robotics"],
    "description": "ConvNeXt-T stage 2: LayerNorm + 2x2/2 downsample, then 3 blocks (dw7x7, channels-last LN, 4x MLP "
                   "with GELU, layer scale, residual)",
    "source": "ConvNeXt-Tiny (Liu et al. 2022) stage 2 (96 -> 192 channels), 32x32 -> 16x16 (reduced 128x128 input)",
}


class LayerNorm2d(nn.Module):
    """LayerNorm over channels of an NCHW tensor (ConvNeXt's channels_first LN)."""

    def __init__(self, c, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(c))
        self.bias = nn.Parameter(0.1 * torch.randn(c))
        self.eps = eps

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pw1 = nn.Linear(dim, 4 * dim)
        self.pw2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(0.5 + 0.1 * torch.randn(dim))  # layer scale (trained values are O(0.1-1))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pw2(F.gelu(self.pw1(self.norm(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


class Model(nn.Module):
    def __init__(self, cin=96, dim=192, depth=3):
        super().__init__()
        self.down = nn.Sequential(LayerNorm2d(cin), nn.Conv2d(cin, dim, 2, 2))
        self.blocks = nn.Sequential(*[Block(dim) for _ in range(depth)])

    def forward(self, x):
        return self.blocks(self.down(x))


def get_inputs():
    return [torch.randn(1, 96, 32, 32)]


def get_init_inputs():
    return [96, 192, 3]
