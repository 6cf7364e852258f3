import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_erfnet_non_bottleneck_1d",
    "level": 2,
    "domains": ["robotics"],
    "description": "ERFNet non-bottleneck-1D: 3x1/1x3 factorised convs (second pair dilated 2), BN, ReLU, residual",
    "source": "ERFNet encoder block at 512x256 input / 8, cropped (32x64x128, dilation 2)",
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
    def __init__(self, c, d):
        super().__init__()
        self.c1 = nn.Conv2d(c, c, (3, 1), padding=(1, 0))
        self.c2 = nn.Conv2d(c, c, (1, 3), padding=(0, 1))
        self.bn1 = _bn(c, 1e-3)
        self.c3 = nn.Conv2d(c, c, (3, 1), padding=(d, 0), dilation=(d, 1))
        self.c4 = nn.Conv2d(c, c, (1, 3), padding=(0, d), dilation=(1, d))
        self.bn2 = _bn(c, 1e-3)

    def forward(self, x):
        y = F.relu(self.bn1(self.c2(F.relu(self.c1(x)))))
        y = self.bn2(self.c4(F.relu(self.c3(y))))
        return F.relu(x + y)


def get_inputs():
    return [torch.randn(1, 128, 16, 32)]


def get_init_inputs():
    return [128, 2]
