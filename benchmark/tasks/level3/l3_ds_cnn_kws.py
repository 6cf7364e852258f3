import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_ds_cnn_kws",
    "level": 3,
    "domains": ["mobile", "aiot"],
    "family": "DS-CNN",
    "description": "DS-CNN keyword spotter (12 classes): 10x4 stem conv on 49x10 MFCC, four depthwise-separable blocks (64 ch), average pool, FC",
    "source": "MLPerf Tiny keyword spotting reference (DS-CNN-S, Zhang et al. 2017), Speech Commands 49 frames x 10 MFCC",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


def _dws(c):
    return nn.Sequential(nn.Conv2d(c, c, 3, 1, 1, groups=c, bias=False), _bn(c), nn.ReLU(),
                         nn.Conv2d(c, c, 1, bias=False), _bn(c), nn.ReLU())


class Model(nn.Module):
    def __init__(self, c, num_classes):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, c, (10, 4), (2, 2), (5, 1), bias=False), _bn(c), nn.ReLU())
        self.blocks = nn.Sequential(*[_dws(c) for _ in range(4)])
        self.fc = nn.Linear(c, num_classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def get_inputs():
    return [torch.randn(1, 1, 49, 10)]


def get_init_inputs():
    return [64, 12]
