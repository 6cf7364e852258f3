import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_psp_pyramid_pool",
    "level": 2,
    "domains": ["aiot"],
    "family": "PSPNet",
    "description": "PSP pyramid pooling: adaptive avg pools to 1/2/3/6, 1x1 conv-BN-ReLU each, bilinear up, concat with input",
    "source": "PSPNet (Zhao et al. 2017) pyramid pooling module on a 12x12x128 feature of a small smart-camera segmenter",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, c, bins):
        super().__init__()
        self.bins = bins
        self.convs = nn.ModuleList(
            nn.Sequential(nn.Conv2d(c, c // 4, 1, bias=False), _bn(c // 4), nn.ReLU()) for _ in bins)

    def forward(self, x):
        size = x.shape[2:]
        outs = [x]
        for b, conv in zip(self.bins, self.convs):
            outs.append(F.interpolate(conv(F.adaptive_avg_pool2d(x, b)), size=size, mode="bilinear",
                                      align_corners=False))
        return torch.cat(outs, dim=1)


def get_inputs():
    return [torch.randn(1, 128, 12, 12)]


def get_init_inputs():
    return [128, (1, 2, 3, 6)]
