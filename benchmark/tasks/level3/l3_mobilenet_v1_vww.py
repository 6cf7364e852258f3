import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_mobilenet_v1_vww",
    "level": 3,
    "domains": ["mobile", "aiot"],
    "family": "MobileNetV1",
    "description": "MobileNetV1 0.25 at 96x96 for Visual Wake Words (2 classes): stem + 13 depthwise-separable blocks, global pool, FC",
    "source": "MLPerf Tiny visual wake words reference (MobileNetV1 alpha 0.25, Howard et al. 2017; Chowdhery et al. 2019), 96x96 RGB",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


CFG = [(8, 16, 1), (16, 32, 2), (32, 32, 1), (32, 64, 2), (64, 64, 1), (64, 128, 2), (128, 128, 1),
       (128, 128, 1), (128, 128, 1), (128, 128, 1), (128, 128, 1), (128, 256, 2), (256, 256, 1)]


def _dws(cin, cout, s):
    return nn.Sequential(nn.Conv2d(cin, cin, 3, s, 1, groups=cin, bias=False), _bn(cin), nn.ReLU(),
                         nn.Conv2d(cin, cout, 1, bias=False), _bn(cout), nn.ReLU())


class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), _bn(8), nn.ReLU())
        self.blocks = nn.Sequential(*[_dws(*c) for c in CFG])
        self.fc = nn.Linear(256, num_classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def get_inputs():
    return [torch.randn(1, 3, 96, 96)]


def get_init_inputs():
    return [2]
