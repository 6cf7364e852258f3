import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_c3_csp_block",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "YOLOv5",
    "description": "YOLOv5 C3: two 1x1 branches, one through a bottleneck (1x1, 3x3, + x), concat, 1x1; SiLU throughout",
    "source": "YOLOv5n (Ultralytics v6) backbone C3 at stage 3 (64 channels) at a 256x256 input (32x32)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


def _cbs(cin, cout, k=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, padding=k // 2, bias=False), _bn(cout), nn.SiLU())


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c // 2
        self.cv1, self.cv2, self.cv3 = _cbs(c, h), _cbs(c, h), _cbs(2 * h, c)
        self.m1, self.m2 = _cbs(h, h), _cbs(h, h, 3)

    def forward(self, x):
        a = self.cv1(x)
        a = a + self.m2(self.m1(a))
        return self.cv3(torch.cat([a, self.cv2(x)], dim=1))


def get_inputs():
    return [torch.randn(1, 64, 32, 32)]


def get_init_inputs():
    return [64]
