import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_resnet8_cifar",
    "level": 3,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "ResNet-8",
    "description": "ResNet-8 for 32x32 images (10 classes): stem conv, three residual stacks (16/32/64), average pool, FC",
    "source": "MLPerf Tiny image classification reference (ResNet-8 on CIFAR-10, Banbury et al. 2021)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Block(nn.Module):
    def __init__(self, cin, cout, s):
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(cin, cout, 3, s, 1), _bn(cout), nn.ReLU())
        self.conv2 = nn.Sequential(nn.Conv2d(cout, cout, 3, 1, 1), _bn(cout))
        self.short = None if s == 1 and cin == cout else nn.Conv2d(cin, cout, 1, s)

    def forward(self, x):
        y = self.conv2(self.conv1(x))
        return F.relu(y + (x if self.short is None else self.short(x)))


class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1), _bn(16), nn.ReLU())
        self.stacks = nn.Sequential(Block(16, 16, 1), Block(16, 32, 2), Block(32, 64, 2))
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        x = self.stacks(self.stem(x))
        return self.fc(torch.flatten(F.avg_pool2d(x, 8), 1))


def get_inputs():
    return [torch.randn(1, 3, 32, 32)]


def get_init_inputs():
    return [10]
