import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_convnext_block",
    "level": 2,
    "domains": ["mobile", "robotics"],
    "description": "ConvNeXt block: dw 7x7, channels-last LayerNorm, Linear 4x, GELU, Linear, layer scale, residual",
    "source": "ConvNeXt-Atto (edge variant) stage 3 block at 224 input (14x14x160)",
}


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c, eps=1e-6)
        self.fc1 = nn.Linear(c, 4 * c)
        self.fc2 = nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(0.5 + 0.1 * torch.randn(c))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.fc2(F.gelu(self.fc1(self.norm(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


def get_inputs():
    return [torch.randn(1, 160, 14, 14)]


def get_init_inputs():
    return [160]
