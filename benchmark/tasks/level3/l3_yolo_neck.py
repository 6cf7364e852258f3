import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_yolo_neck",
    "level": 3,
    "domains": ["robotics", "aiot"],
    "description": "YOLOv8n-style SPPF + PAN-FPN neck: C2f blocks, nearest 2x upsample, concat, strided-conv downsample; "
                   "three outputs at strides 8/16/32",
    "source": "YOLOv8n (Ultralytics) neck, width 0.25 (64/128/256 channels), 256x256 input -> 32/16/8 feature maps",
}


def _bn(c):
    bn = nn.BatchNorm2d(c, eps=1e-3)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Conv(nn.Sequential):
    def __init__(self, cin, cout, k=1, s=1):
        super().__init__(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), _bn(cout), nn.SiLU())


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut):
        super().__init__()
        self.cv1, self.cv2, self.add = Conv(c, c, 3), Conv(c, c, 3), shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    def __init__(self, cin, cout, n=1, shortcut=False):
        super().__init__()
        self.c = cout // 2
        self.cv1 = Conv(cin, 2 * self.c)
        self.cv2 = Conv((2 + n) * self.c, cout)
        self.m = nn.ModuleList([Bottleneck(self.c, shortcut) for _ in range(n)])

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        for m in self.m:
            y.append(m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.cv1, self.cv2 = Conv(c, c // 2), Conv(c * 2, c)

    def forward(self, x):
        x = self.cv1(x)
        y1 = F.max_pool2d(x, 5, 1, 2)
        y2 = F.max_pool2d(y1, 5, 1, 2)
        y3 = F.max_pool2d(y2, 5, 1, 2)
        return self.cv2(torch.cat([x, y1, y2, y3], 1))


class Model(nn.Module):
    def __init__(self, c3=64, c4=128, c5=256):
        super().__init__()
        self.sppf = SPPF(c5)
        self.td4 = C2f(c5 + c4, c4)
        self.td3 = C2f(c4 + c3, c3)
        self.down3 = Conv(c3, c3, 3, 2)
        self.bu4 = C2f(c3 + c4, c4)
        self.down4 = Conv(c4, c4, 3, 2)
        self.bu5 = C2f(c4 + c5, c5)

    def forward(self, p3, p4, p5):
        p5 = self.sppf(p5)
        t4 = self.td4(torch.cat([F.interpolate(p5, scale_factor=2.0, mode="nearest"), p4], 1))
        n3 = self.td3(torch.cat([F.interpolate(t4, scale_factor=2.0, mode="nearest"), p3], 1))
        n4 = self.bu4(torch.cat([self.down3(n3), t4], 1))
        n5 = self.bu5(torch.cat([self.down4(n4), p5], 1))
        return n3, n4, n5


def get_inputs():
    return [torch.randn(1, 64, 32, 32), torch.randn(1, 128, 16, 16), torch.randn(1, 256, 8, 8)]


def get_init_inputs():
    return [64, 128, 256]
