import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_pointpillars_backbone",
    "level": 3,
    "domains": ["robotics"],
    "description": "PointPillars 2D backbone + neck + SSD head on the BEV pseudo-image: 3 strided conv blocks "
                   "(64/128/256), transposed-conv upsampling to a common scale, concat, cls/box/dir 1x1 heads",
    "source": "PointPillars (Lang et al. 2019) RPN at half width (32/64/128) on a 64x64 pillar grid (cropped KITTI range)",
}


def _bn(c):
    bn = nn.BatchNorm2d(c, eps=1e-3)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


def block(cin, cout, n, stride):
    layers = [nn.Conv2d(cin, cout, 3, stride, 1, bias=False), _bn(cout), nn.ReLU()]
    for _ in range(n):
        layers += [nn.Conv2d(cout, cout, 3, 1, 1, bias=False), _bn(cout), nn.ReLU()]
    return nn.Sequential(*layers)


class Model(nn.Module):
    def __init__(self, cin=64, widths=(32, 64, 128), up=64, anchors=2, classes=3):
        super().__init__()
        self.b1 = block(cin, widths[0], 3, 2)
        self.b2 = block(widths[0], widths[1], 5, 2)
        self.b3 = block(widths[1], widths[2], 5, 2)
        self.u1 = nn.Sequential(nn.ConvTranspose2d(widths[0], up, 1, 1, bias=False), _bn(up), nn.ReLU())
        self.u2 = nn.Sequential(nn.ConvTranspose2d(widths[1], up, 2, 2, bias=False), _bn(up), nn.ReLU())
        self.u3 = nn.Sequential(nn.ConvTranspose2d(widths[2], up, 4, 4, bias=False), _bn(up), nn.ReLU())
        self.cls = nn.Conv2d(3 * up, anchors * classes, 1)
        self.box = nn.Conv2d(3 * up, anchors * 7, 1)
        self.dir = nn.Conv2d(3 * up, anchors * 2, 1)

    def forward(self, bev):
        x1 = self.b1(bev)
        x2 = self.b2(x1)
        x3 = self.b3(x2)
        x = torch.cat([self.u1(x1), self.u2(x2), self.u3(x3)], 1)
        return self.cls(x), self.box(x), self.dir(x)


def get_inputs():
    # pseudo-image: mostly empty pillars, as after scattering a sparse LiDAR sweep
    return [F.relu(torch.randn(1, 64, 64, 64)) * (torch.rand(1, 1, 64, 64) < 0.3)]


def get_init_inputs():
    return [64, (32, 64, 128), 64, 2, 3]
