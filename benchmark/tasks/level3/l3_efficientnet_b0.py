import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_efficientnet_b0",
    "level": 3,
    "domains": ["mobile"],
    "description": "EfficientNet-B0 (1000 classes) at 128x128: MBConv blocks with squeeze-excitation and SiLU",
    "source": "EfficientNet-B0 (Tan & Le 2019), torchvision layout (no stochastic depth at eval), reduced 128x128 input",
}

# expand ratio, kernel, stride, in, out, repeats
CFG = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
       (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]


def _bn(c):
    bn = nn.BatchNorm2d(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


def conv_bn(cin, cout, k, s=1, groups=1, act=True):
    layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), _bn(cout)]
    if act:
        layers.append(nn.SiLU())
    return nn.Sequential(*layers)


class MBConv(nn.Module):
    def __init__(self, cin, cout, k, stride, e):
        super().__init__()
        hid = cin * e
        sq = max(1, cin // 4)
        self.use_res = stride == 1 and cin == cout
        self.expand = conv_bn(cin, hid, 1) if e != 1 else nn.Identity()
        self.dw = conv_bn(hid, hid, k, stride, groups=hid)
        self.se1 = nn.Conv2d(hid, sq, 1)
        self.se2 = nn.Conv2d(sq, hid, 1)
        self.project = conv_bn(hid, cout, 1, act=False)

    def forward(self, x):
        y = self.dw(self.expand(x))
        s = torch.sigmoid(self.se2(F.silu(self.se1(y.mean((2, 3), keepdim=True)))))
        y = self.project(y * s)
        return x + y if self.use_res else y


class Model(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        layers = [conv_bn(3, 32, 3, 2)]
        for e, k, s, cin, cout, n in CFG:
            for i in range(n):
                layers.append(MBConv(cin if i == 0 else cout, cout, k, s if i == 0 else 1, e))
        layers.append(conv_bn(320, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1280, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


def get_inputs():
    return [torch.randn(1, 3, 128, 128)]


def get_init_inputs():
    return [1000]
