import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_mobilenet_v3_large",
    "level": 3,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "MobileNetV3-Large",
    "description": "MobileNetV3-Large (1000 classes) at 128x128: 15 bnecks with 3x3 / 5x5 depthwise, SE (hard-sigmoid), ReLU / h-swish, last 960 -> 1280 head",
    "source": "MobileNetV3-Large (Howard et al. 2019), torchvision config, reduced 128x128 input",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


def _make_div(v, d=8):
    return max(d, int(v + d / 2) // d * d)


class Bneck(nn.Module):
    def __init__(self, cin, k, e, cout, se, hs, s):
        super().__init__()
        act = nn.Hardswish if hs else nn.ReLU
        layers = [] if e == cin else [nn.Conv2d(cin, e, 1, bias=False), _bn(e), act()]
        layers += [nn.Conv2d(e, e, k, s, k // 2, groups=e, bias=False), _bn(e), act()]
        self.body = nn.Sequential(*layers)
        self.se = None
        if se:
            r = _make_div(e // 4)
            self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(e, r, 1), nn.ReLU(), nn.Conv2d(r, e, 1),
                                    nn.Hardsigmoid())
        self.project = nn.Sequential(nn.Conv2d(e, cout, 1, bias=False), _bn(cout))
        self.res = s == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        if self.se is not None:
            y = y * self.se(y)
        y = self.project(y)
        return x + y if self.res else y


CFG = [  # cin, kernel, expanded, cout, SE, h-swish, stride (torchvision mobilenet_v3_large)
    (16, 3, 16, 16, False, False, 1), (16, 3, 64, 24, False, False, 2), (24, 3, 72, 24, False, False, 1),
    (24, 5, 72, 40, True, False, 2), (40, 5, 120, 40, True, False, 1), (40, 5, 120, 40, True, False, 1),
    (40, 3, 240, 80, False, True, 2), (80, 3, 200, 80, False, True, 1), (80, 3, 184, 80, False, True, 1),
    (80, 3, 184, 80, False, True, 1), (80, 3, 480, 112, True, True, 1), (112, 3, 672, 112, True, True, 1),
    (112, 5, 672, 160, True, True, 2), (160, 5, 960, 160, True, True, 1), (160, 5, 960, 160, True, True, 1),
]


class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), _bn(16), nn.Hardswish())
        self.blocks = nn.Sequential(*[Bneck(*c) for c in CFG])
        self.last = nn.Sequential(nn.Conv2d(160, 960, 1, bias=False), _bn(960), nn.Hardswish())
        self.head = nn.Sequential(nn.Linear(960, 1280), nn.Hardswish(), nn.Linear(1280, num_classes))

    def forward(self, x):
        x = self.last(self.blocks(self.stem(x)))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def get_inputs():
    return [torch.randn(1, 3, 128, 128)]


def get_init_inputs():
    return [1000]
