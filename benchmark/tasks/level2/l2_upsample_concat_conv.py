import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_upsample_concat_conv",
    "level": 2,
    "domains": ["robotics", "mobile"],
    "description": "Segmentation decoder step: bilinear 2x upsample, concat skip, conv 3x3 + BN + ReLU",
    "source": "DeepLabV3+ / U-Net lite decoder (28x28x64 up to 56x56, skip 56x56x24, out 32)",
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
    def __init__(self, cin, cskip, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin + cskip, cout, 3, padding=1, bias=False)
        self.bn = _bn(cout)

    def forward(self, x, skip):
        x = F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
        return F.relu(self.bn(self.conv(torch.cat([x, skip], 1))))


def get_inputs():
    return [torch.randn(1, 64, 28, 28), torch.randn(1, 24, 56, 56)]


def get_init_inputs():
    return [64, 24, 32]
