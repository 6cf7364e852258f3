import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_ssdlite_head",
    "level": 2,
    "domains": ["mobile", "robotics"],
    "description": "SSDLite head on one level: dw 3x3 + BN + ReLU6 + 1x1 to cls and box, permute, flatten, concat",
    "source": "SSDLite-MobileNetV2 at 320x320, 20x20x96 level (6 anchors, 91 classes)",
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
    def __init__(self, c, anchors, classes):
        super().__init__()
        self.nc = classes
        self.cls_dw = nn.Conv2d(c, c, 3, 1, 1, groups=c, bias=False)
        self.cls_bn = _bn(c)
        self.cls = nn.Conv2d(c, anchors * classes, 1)
        self.box_dw = nn.Conv2d(c, c, 3, 1, 1, groups=c, bias=False)
        self.box_bn = _bn(c)
        self.box = nn.Conv2d(c, anchors * 4, 1)

    def forward(self, x):
        cls = self.cls(F.relu6(self.cls_bn(self.cls_dw(x)))).permute(0, 2, 3, 1).reshape(1, -1, self.nc)
        box = self.box(F.relu6(self.box_bn(self.box_dw(x)))).permute(0, 2, 3, 1).reshape(1, -1, 4)
        return torch.cat([box, torch.softmax(cls, -1)], -1)


def get_inputs():
    return [torch.randn(1, 96, 20, 20)]


def get_init_inputs():
    return [96, 6, 91]
