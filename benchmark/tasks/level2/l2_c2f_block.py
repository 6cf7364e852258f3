import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_c2f_block",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "description": "YOLOv8 C2f: 1x1 conv, split, 1 bottleneck (two 3x3 Conv, shortcut), concat, 1x1 conv",
    "source": "YOLOv8n backbone stage 2 at 320x320 (40x40x64)",
}


def _bn(c, eps=1e-5):
    bn = nn.BatchNorm2d(c, eps=eps)
    # non-trivial running statistics so a wrong BN lowering shows up
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Conv(nn.Module):
    """Ultralytics Conv: conv + BN + SiLU."""

    def __init__(self, cin, cout, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, k // 2, bias=False)
        self.bn = _bn(cout, 1e-3)

    def forward(self, x):
        return F.silu(self.bn(self.conv(x)))


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.h = c // 2
        self.cv1 = Conv(c, c)
        self.m1 = Conv(self.h, self.h, 3)
        self.m2 = Conv(self.h, self.h, 3)
        self.cv2 = Conv(3 * self.h, c)

    def forward(self, x):
        a, b = self.cv1(x).chunk(2, 1)
        c = b + self.m2(self.m1(b))
        return self.cv2(torch.cat([a, b, c], 1))


def get_inputs():
    return [torch.randn(1, 64, 40, 40)]


def get_init_inputs():
    return [64]
