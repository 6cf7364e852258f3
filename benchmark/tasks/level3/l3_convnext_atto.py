import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_convnext_atto",
    "level": 3,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "ConvNeXt",
    "description": "ConvNeXt-Atto (1000 classes) at 96x96: 4x4 patchify stem, blocks (dw7x7, LayerNorm, MLP x4 with GELU, layer scale) in stages of 2/2/6/2 at 40/80/160/320 channels, downsampling LN + 2x2 convs",
    "source": "ConvNeXt-Atto (timm, Wightman 2022; Liu et al. 2022 design), reduced 96x96 input",
}


class LN2d(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln = nn.LayerNorm(c, eps=1e-6)

    def forward(self, x):
        return self.ln(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.ln = nn.LayerNorm(c, eps=1e-6)
        self.fc1, self.fc2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(torch.rand(c) * 0.5 + 0.1)

    def forward(self, x):
        y = self.ln(self.dw(x).permute(0, 2, 3, 1))
        y = self.fc2(F.gelu(self.fc1(y))) * self.gamma
        return x + y.permute(0, 3, 1, 2)


class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        dims, depths = (40, 80, 160, 320), (2, 2, 6, 2)
        layers = [nn.Conv2d(3, dims[0], 4, 4), LN2d(dims[0])]
        for i, (c, n) in enumerate(zip(dims, depths)):
            if i > 0:
                layers += [LN2d(dims[i - 1]), nn.Conv2d(dims[i - 1], c, 2, 2)]
            layers += [Block(c) for _ in range(n)]
        self.features = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], num_classes)

    def forward(self, x):
        x = self.features(x).mean(dim=(2, 3))
        return self.head(self.norm(x))


def get_inputs():
    return [torch.randn(1, 3, 96, 96)]


def get_init_inputs():
    return [1000]
