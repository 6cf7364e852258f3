import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_yolov5n_backbone",
    "level": 3,
    "domains": ["robotics", "aiot"],
    "family": "YOLOv5",
    "description": "YOLOv5n backbone + SPPF at 256x256: 6x6 s2 stem, CBS downsamples and C3 blocks (16/32/64/128/256 ch), SPPF; returns the P3 / P4 / P5 features",
    "source": "YOLOv5n v6.0 (Ultralytics, depth 0.33, width 0.25) backbone, reduced 256x256 input",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


def _cbs(cin, cout, k=1, s=1, p=None):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2 if p is None else p, bias=False), _bn(cout), nn.SiLU())


class C3(nn.Module):
    def __init__(self, cin, cout, n):
        super().__init__()
        h = cout // 2
        self.cv1, self.cv2, self.cv3 = _cbs(cin, h), _cbs(cin, h), _cbs(2 * h, cout)
        self.m = nn.ModuleList(nn.Sequential(_cbs(h, h), _cbs(h, h, 3)) for _ in range(n))

    def forward(self, x):
        a = self.cv1(x)
        for m in self.m:
            a = a + m(a)
        return self.cv3(torch.cat([a, self.cv2(x)], dim=1))


class SPPF(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.cv1, self.cv2 = _cbs(c, c // 2), _cbs(2 * c, c)

    def forward(self, x):
        x = self.cv1(x)
        y1 = F.max_pool2d(x, 5, 1, 2)
        y2 = F.max_pool2d(y1, 5, 1, 2)
        return self.cv2(torch.cat([x, y1, y2, F.max_pool2d(y2, 5, 1, 2)], dim=1))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = _cbs(3, 16, 6, 2, 2)
        self.s2 = nn.Sequential(_cbs(16, 32, 3, 2), C3(32, 32, 1))
        self.s3 = nn.Sequential(_cbs(32, 64, 3, 2), C3(64, 64, 2))
        self.s4 = nn.Sequential(_cbs(64, 128, 3, 2), C3(128, 128, 3))
        self.s5 = nn.Sequential(_cbs(128, 256, 3, 2), C3(256, 256, 1), SPPF(256))

    def forward(self, x):
        p3 = self.s3(self.s2(self.stem(x)))
        p4 = self.s4(p3)
        return p3, p4, self.s5(p4)


def get_inputs():
    return [torch.randn(1, 3, 256, 256)]


def get_init_inputs():
    return []
