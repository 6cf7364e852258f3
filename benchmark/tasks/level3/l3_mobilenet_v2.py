import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_mobilenet_v2",
    "level": 3,
    "domains": ["mobile", "aiot"],
    "description": "MobileNetV2 (width 1.0, 1000 classes) at 128x128 input: 17 inverted-residual blocks, BN folded at eval",
    "source": "MobileNetV2 (Sandler et al. 2018), torchvision config, reduced 128x128 input (mobile classifier)",
}

# (expansion t, out channels c, repeats n, first stride s) - the paper's table 2
CFG = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def _bn(c):
    bn = nn.BatchNorm2d(c)
    # non-trivial running statistics so a wrong BN lowering shows up
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


def conv_bn(cin, cout, k, s=1, groups=1, act=True):
    layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), _bn(cout)]
    if act:
        layers.append(nn.ReLU6())
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, t):
        super().__init__()
        hid = cin * t
        self.use_res = stride == 1 and cin == cout
        layers = [] if t == 1 else [conv_bn(cin, hid, 1)]
        layers += [conv_bn(hid, hid, 3, stride, groups=hid), conv_bn(hid, cout, 1, act=False)]
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_res else y


class Model(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        layers = [conv_bn(3, 32, 3, 2)]
        cin = 32
        for t, c, n, s in CFG:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(conv_bn(cin, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(1280, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.classifier(x)


def get_inputs():
    return [torch.randn(1, 3, 128, 128)]


def get_init_inputs():
    return [1000]
