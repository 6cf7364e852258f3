import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_fast_scnn",
    "level": 3,
    "domains": ["robotics", "aiot"],
    "family": "Fast-SCNN",
    "description": "Fast-SCNN segmentation at 128x256: learning-to-downsample, global feature extractor (inverted residuals + pyramid pooling), feature fusion, classifier to 19 classes, upsampled",
    "source": "Fast-SCNN (Poudel et al. 2019) for Cityscapes (19 classes), reduced 128x256 input (robot / vehicle free-space)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


def _cbr(cin, cout, k=3, s=1, g=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, groups=g, bias=False), _bn(cout), nn.ReLU())


def _dsconv(cin, cout, s=1):
    return nn.Sequential(_cbr(cin, cin, 3, s, cin), _cbr(cin, cout, 1))


class IR(nn.Module):
    def __init__(self, cin, cout, s, t=6):
        super().__init__()
        e = cin * t
        self.body = nn.Sequential(_cbr(cin, e, 1), _cbr(e, e, 3, s, e), nn.Conv2d(e, cout, 1, bias=False), _bn(cout))
        self.res = s == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.res else self.body(x)


class Model(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.ltd = nn.Sequential(_cbr(3, 32, 3, 2), _dsconv(32, 48, 2), _dsconv(48, 64, 2))
        self.gfe = nn.Sequential(IR(64, 64, 2), IR(64, 64, 1), IR(64, 64, 1), IR(64, 96, 2), IR(96, 96, 1),
                                 IR(96, 96, 1), IR(96, 128, 1), IR(128, 128, 1), IR(128, 128, 1))
        self.ppm = nn.ModuleList(_cbr(128, 32, 1) for _ in range(4))
        self.ppm_out = _cbr(256, 128, 1)
        self.ffm_dw = _cbr(128, 128, 3, 1, 128)
        self.ffm_low = nn.Sequential(nn.Conv2d(128, 128, 1), _bn(128))
        self.ffm_high = nn.Sequential(nn.Conv2d(64, 128, 1), _bn(128))
        self.cls = nn.Sequential(_dsconv(128, 128), _dsconv(128, 128), nn.Conv2d(128, num_classes, 1))

    def forward(self, x):
        size = x.shape[2:]
        high = self.ltd(x)
        g = self.gfe(high)
        pools = [F.interpolate(m(F.adaptive_avg_pool2d(g, b)), size=g.shape[2:], mode="bilinear",
                               align_corners=True) for m, b in zip(self.ppm, (1, 2, 3, 6))]
        g = self.ppm_out(torch.cat([g] + pools, dim=1))
        low = F.interpolate(g, size=high.shape[2:], mode="bilinear", align_corners=True)
        f = F.relu(self.ffm_low(self.ffm_dw(low)) + self.ffm_high(high))
        return F.interpolate(self.cls(f), size=size, mode="bilinear", align_corners=True)


def get_inputs():
    return [torch.randn(1, 3, 128, 256)]


def get_init_inputs():
    return [19]
