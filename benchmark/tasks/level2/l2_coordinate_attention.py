import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_coordinate_attention",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "Coordinate attention",
    "description": "Coordinate attention: pool along H and W, shared 1x1 conv-BN-h-swish, split, two 1x1 convs, sigmoid gates along H and W",
    "source": "Coordinate Attention (Hou et al. 2021) in a MobileNetV2 block, 16x16x96",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, c, r):
        super().__init__()
        self.conv1 = nn.Conv2d(c, r, 1)
        self.bn = _bn(r)
        self.conv_h = nn.Conv2d(r, c, 1)
        self.conv_w = nn.Conv2d(r, c, 1)

    def forward(self, x):
        n, c, h, w = x.shape
        xh = x.mean(3, keepdim=True)
        xw = x.mean(2, keepdim=True).permute(0, 1, 3, 2)
        y = F.hardswish(self.bn(self.conv1(torch.cat([xh, xw], dim=2))))
        yh, yw = torch.split(y, [h, w], dim=2)
        ah = torch.sigmoid(self.conv_h(yh))
        aw = torch.sigmoid(self.conv_w(yw.permute(0, 1, 3, 2)))
        # the two gates combined first (as the reference is associative): multiplied into x one at a time,
        # TVM's fused conv + sigmoid + broadcast multiply had no DLight GPU schedule (a cache-write stage
        # left un-inlined) and the task did not build on OpenCL / CUDA
        return x * (ah * aw)


def get_inputs():
    return [torch.randn(1, 96, 16, 16)]


def get_init_inputs():
    return [96, 8]
