import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_cbam",
    "level": 2,
    "domains": ["robotics", "mobile"],
    "description": "CBAM: channel attention (avg+max pooled shared MLP; global max as a full-window max_pool2d since adaptive_max_pool2d does not import) then spatial attention (7x7 conv over mean/max maps)",
    "source": "CBAM on ResNet-18 layer2 output at 224 input (28x28x128)",
}


class Model(nn.Module):
    def __init__(self, c, r=16):
        super().__init__()
        self.mlp = nn.Sequential(nn.Conv2d(c, c // r, 1, bias=False), nn.ReLU(), nn.Conv2d(c // r, c, 1, bias=False))
        self.spatial = nn.Conv2d(2, 1, 7, padding=3, bias=False)

    def forward(self, x):
        ca = torch.sigmoid(self.mlp(F.adaptive_avg_pool2d(x, 1)) + self.mlp(F.max_pool2d(x, x.shape[-2:])))
        x = x * ca
        sa = torch.cat([x.mean(1, keepdim=True), x.max(1, keepdim=True).values], 1)
        return x * torch.sigmoid(self.spatial(sa))


def get_inputs():
    return [torch.randn(1, 128, 28, 28)]


def get_init_inputs():
    return [128, 16]
