import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_ds_cnn_kws_block",
    "level": 2,
    "domains": ["aiot"],
    "description": "DS-CNN keyword-spotting block: dw 3x3 + BN + ReLU, pw 1x1 + BN + ReLU on a 25x5 MFCC map with 64 channels",
    "source": "DS-CNN-S (Zhang et al. 2017, Hello Edge) on 49 frames x 10 MFCC after the stride-2 stem (25x5x64)",
}


def _bn(c, eps=1e-5):
    bn = nn.BatchNorm2d(c, eps=eps)
    # non-trivial running statistics so a wrong BN lowering shows up
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, c, n):
        super().__init__()
        layers = []
        for _ in range(n):
            layers += [nn.Conv2d(c, c, 3, 1, 1, groups=c, bias=False), _bn(c), nn.ReLU(),
                       nn.Conv2d(c, c, 1, bias=False), _bn(c), nn.ReLU()]
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


def get_inputs():
    return [torch.randn(1, 64, 25, 5)]


def get_init_inputs():
    return [64, 4]
