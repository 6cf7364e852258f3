import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_focus_space_to_depth",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "description": "YOLOv5 Focus: 4-way strided slicing (space-to-depth), concat, conv 3x3 + BN + SiLU",
    "source": "YOLOv5n v5.0 Focus stem at 256x256 input (3 -> 12 -> 16 channels, 128x128)",
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
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = Conv(4 * cin, cout, 3)

    def forward(self, x):
        x = torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1)
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 3, 256, 256)]


def get_init_inputs():
    return [3, 16]
