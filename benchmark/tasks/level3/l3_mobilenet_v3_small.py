import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_mobilenet_v3_small",
    "level": 3,
    "domains": ["mobile", "aiot"],
    "description": "MobileNetV3-Small (1000 classes) at 128x128: bnecks with SE, hardswish / hardsigmoid",
    "source": "MobileNetV3-Small (Howard et al. 2019), torchvision config, reduced 128x128 input",
}

# kernel, expanded, out, use SE, activation ("RE" relu / "HS" hardswish), stride
CFG = [
    (3, 16, 16, True, "RE", 2), (3, 72, 24, False, "RE", 2), (3, 88, 24, False, "RE", 1),
    (5, 96, 40, True, "HS", 2), (5, 240, 40, True, "HS", 1), (5, 240, 40, True, "HS", 1),
    (5, 120, 48, True, "HS", 1), (5, 144, 48, True, "HS", 1), (5, 288, 96, True, "HS", 2),
    (5, 576, 96, True, "HS", 1), (5, 576, 96, True, "HS", 1),
]


def _div8(v):
    return max(8, int(v + 4) // 8 * 8)


def _bn(c):
    bn = nn.BatchNorm2d(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class ConvBNAct(nn.Sequential):
    def __init__(self, cin, cout, k, s=1, groups=1, act=None):
        layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), _bn(cout)]
        if act is not None:
            layers.append(act())
        super().__init__(*layers)


class SqueezeExcite(nn.Module):
    def __init__(self, c):
        super().__init__()
        sq = _div8(c // 4)
        self.fc1 = nn.Conv2d(c, sq, 1)
        self.fc2 = nn.Conv2d(sq, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))
        return x * s


class Bneck(nn.Module):
    def __init__(self, cin, k, exp, cout, se, act, stride):
        super().__init__()
        a = nn.ReLU if act == "RE" else nn.Hardswish
        self.use_res = stride == 1 and cin == cout
        layers = [] if exp == cin else [ConvBNAct(cin, exp, 1, act=a)]
        layers.append(ConvBNAct(exp, exp, k, stride, groups=exp, act=a))
        if se:
            layers.append(SqueezeExcite(exp))
        layers.append(ConvBNAct(exp, cout, 1))
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_res else y


class Model(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        layers = [ConvBNAct(3, 16, 3, 2, act=nn.Hardswish)]
        cin = 16
        for k, exp, cout, se, act, s in CFG:
            layers.append(Bneck(cin, k, exp, cout, se, act, s))
            cin = cout
        layers.append(ConvBNAct(cin, 576, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.fc1 = nn.Linear(576, 1024)
        self.fc2 = nn.Linear(1024, num_classes)

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), 1).flatten(1)
        return self.fc2(F.hardswish(self.fc1(x)))


def get_inputs():
    return [torch.randn(1, 3, 128, 128)]


def get_init_inputs():
    return [1000]
