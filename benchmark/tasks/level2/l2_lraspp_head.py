import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_lraspp_head",
    "level": 2,
    "domains": ["mobile", "robotics"],
    "description": "LR-ASPP segmentation head: 1x1 conv+BN+ReLU branch gated by sigmoid(1x1 conv of global pool), bilinear upsample, add low-level classifier",
    "source": "MobileNetV3-Large LR-ASPP (torchvision) at 256x256 (16x16x960 high, 32x32x40 low, 21 classes)",
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
    def __init__(self, c_high, c_low, inter, classes):
        super().__init__()
        self.cbr = nn.Conv2d(c_high, inter, 1, bias=False)
        self.bn = _bn(inter)
        self.scale = nn.Conv2d(c_high, inter, 1)
        self.low_cls = nn.Conv2d(c_low, classes, 1)
        self.high_cls = nn.Conv2d(inter, classes, 1)

    def forward(self, low, high):
        x = F.relu(self.bn(self.cbr(high))) * torch.sigmoid(self.scale(F.adaptive_avg_pool2d(high, 1)))
        x = F.interpolate(x, size=low.shape[-2:], mode="bilinear", align_corners=False)
        return self.low_cls(low) + self.high_cls(x)


def get_inputs():
    return [torch.randn(1, 40, 32, 32), torch.randn(1, 960, 16, 16)]


def get_init_inputs():
    return [960, 40, 128, 21]
