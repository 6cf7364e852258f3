import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_sppf",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "description": "YOLO SPPF: 1x1 conv, three chained 5x5 max-pools, concat, 1x1 conv",
    "source": "YOLOv8n SPPF at 320x320 (10x10x256)",
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
        self.cv1 = Conv(c, c // 2)
        self.cv2 = Conv(c * 2, c)

    def forward(self, x):
        x = self.cv1(x)
        y1 = F.max_pool2d(x, 5, 1, 2)
        y2 = F.max_pool2d(y1, 5, 1, 2)
        y3 = F.max_pool2d(y2, 5, 1, 2)
        return self.cv2(torch.cat([x, y1, y2, y3], 1))


def get_inputs():
    return [torch.randn(1, 256, 10, 10)]


def get_init_inputs():
    return [256]
