import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_regnetx_200mf",
    "level": 3,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "RegNet",
    "description": "RegNetX-200MF (1000 classes) at 128x128: stem, 4 stages of group-width-8 bottleneck blocks (24/56/152/368), pool, FC",
    "source": "RegNetX-200MF (Radosavovic et al. 2020), torchvision layout (depths 1/1/4/7), reduced 128x128 input",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class XBlock(nn.Module):
    def __init__(self, cin, cout, s, gw):
        super().__init__()
        self.a = nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), _bn(cout), nn.ReLU())
        self.b = nn.Sequential(nn.Conv2d(cout, cout, 3, s, 1, groups=cout // gw, bias=False), _bn(cout), nn.ReLU())
        self.c = nn.Sequential(nn.Conv2d(cout, cout, 1, bias=False), _bn(cout))
        self.proj = None if s == 1 and cin == cout else nn.Sequential(nn.Conv2d(cin, cout, 1, s, bias=False), _bn(cout))

    def forward(self, x):
        return F.relu((x if self.proj is None else self.proj(x)) + self.c(self.b(self.a(x))))


class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), _bn(32), nn.ReLU())
        blocks, cin = [], 32
        for w, d in [(24, 1), (56, 1), (152, 4), (368, 7)]:
            for i in range(d):
                blocks.append(XBlock(cin, w, 2 if i == 0 else 1, 8))
                cin = w
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(368, num_classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def get_inputs():
    return [torch.randn(1, 3, 128, 128)]


def get_init_inputs():
    return [1000]
