import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_fcos_head_level",
    "level": 2,
    "domains": ["robotics"],
    "description": "FCOS head level: GroupNorm conv tower (2 layers), cls logits, centerness, exp(scale * reg)",
    "source": "FCOS-lite (MobileNet FPN, 64 channels) at 320x320, stride 16 level (20x20)",
}


class Model(nn.Module):
    def __init__(self, c, classes):
        super().__init__()
        layers = []
        for _ in range(2):
            gn = nn.GroupNorm(16, c)
            gn.weight.data.uniform_(0.5, 1.5)
            gn.bias.data.uniform_(-0.2, 0.2)
            layers += [nn.Conv2d(c, c, 3, padding=1), gn, nn.ReLU()]
        self.tower = nn.Sequential(*layers)
        self.cls = nn.Conv2d(c, classes, 3, padding=1)
        self.ctr = nn.Conv2d(c, 1, 3, padding=1)
        self.reg = nn.Conv2d(c, 4, 3, padding=1)
        self.scale = nn.Parameter(torch.tensor(1.2))

    def forward(self, x):
        y = self.tower(x)
        return torch.sigmoid(self.cls(y)), torch.sigmoid(self.ctr(y)), torch.exp(self.scale * self.reg(y))


def get_inputs():
    return [torch.randn(1, 64, 20, 20)]


def get_init_inputs():
    return [64, 80]
