import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_efficientnet_lite0",
    "level": 3,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "EfficientNet-Lite",
    "description": "EfficientNet-Lite0 (1000 classes) at 128x128: MBConv blocks without SE, ReLU6, fixed stem (32) and head (1280)",
    "source": "EfficientNet-Lite0 (TF Lite team 2020; Tan & Le 2019 without SE and swish), reduced 128x128 input",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


CFG = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
       (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]  # t, k, s, cin, cout, n


class MBConv(nn.Module):
    def __init__(self, cin, cout, k, s, t):
        super().__init__()
        e = cin * t
        layers = [] if t == 1 else [nn.Conv2d(cin, e, 1, bias=False), _bn(e), nn.ReLU6()]
        layers += [nn.Conv2d(e, e, k, s, k // 2, groups=e, bias=False), _bn(e), nn.ReLU6(),
                   nn.Conv2d(e, cout, 1, bias=False), _bn(cout)]
        self.body = nn.Sequential(*layers)
        self.res = s == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.res else self.body(x)


class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        blocks = []
        for t, k, s, cin, cout, n in CFG:
            for i in range(n):
                blocks.append(MBConv(cin if i == 0 else cout, cout, k, s if i == 0 else 1, t))
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), _bn(32), nn.ReLU6())
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Sequential(nn.Conv2d(320, 1280, 1, bias=False), _bn(1280), nn.ReLU6())
        self.fc = nn.Linear(1280, num_classes)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def get_inputs():
    return [torch.randn(1, 3, 128, 128)]


def get_init_inputs():
    return [1000]
