import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_shufflenet_v2",
    "level": 3,
    "domains": ["mobile", "aiot"],
    "description": "ShuffleNetV2 x1.0 (1000 classes) at 128x128: channel split, channel shuffle, depthwise units",
    "source": "ShuffleNetV2 x1.0 (Ma et al. 2018), torchvision layout, reduced 128x128 input",
}


def _bn(c):
    bn = nn.BatchNorm2d(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


def channel_shuffle(x, groups):
    b, c, h, w = x.shape
    return x.view(b, groups, c // groups, h, w).transpose(1, 2).reshape(b, c, h, w)


class Unit(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.stride = stride
        bc = cout // 2
        if stride > 1:
            self.branch1 = nn.Sequential(
                nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False), _bn(cin),
                nn.Conv2d(cin, bc, 1, bias=False), _bn(bc), nn.ReLU())
        b2in = cin if stride > 1 else bc
        self.branch2 = nn.Sequential(
            nn.Conv2d(b2in, bc, 1, bias=False), _bn(bc), nn.ReLU(),
            nn.Conv2d(bc, bc, 3, stride, 1, groups=bc, bias=False), _bn(bc),
            nn.Conv2d(bc, bc, 1, bias=False), _bn(bc), nn.ReLU())

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat([x1, self.branch2(x2)], 1)
        else:
            out = torch.cat([self.branch1(x), self.branch2(x)], 1)
        return channel_shuffle(out, 2)


class Model(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 24, 3, 2, 1, bias=False), _bn(24), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        units, cin = [], 24
        for cout, reps in [(116, 4), (232, 8), (464, 4)]:
            for i in range(reps):
                units.append(Unit(cin, cout, 2 if i == 0 else 1))
                cin = cout
        self.stages = nn.Sequential(*units)
        self.conv5 = nn.Sequential(nn.Conv2d(cin, 1024, 1, bias=False), _bn(1024), nn.ReLU())
        self.fc = nn.Linear(1024, num_classes)

    def forward(self, x):
        x = self.conv5(self.stages(self.stem(x)))
        return self.fc(x.mean([2, 3]))


def get_inputs():
    return [torch.randn(1, 3, 128, 128)]


def get_init_inputs():
    return [1000]
