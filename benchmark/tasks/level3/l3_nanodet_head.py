import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_nanodet_head",
    "level": 3,
    "domains": ["robotics", "aiot", "mobile"],
    "description": "NanoDet-Plus GFL head over 4 pyramid levels: per level 2 depthwise-separable conv+BN+LeakyReLU, "
                   "1x1 to 80 classes + 4x8 distance bins; sigmoid scores, softmax-integral box distances, concat",
    "source": "NanoDet-Plus-m (RangiLyu 2021) head, 96-channel PAN features at 320x320 input (strides 8/16/32/64)",
}

REG_MAX = 7


def _bn(c):
    bn = nn.BatchNorm2d(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class DWSep(nn.Sequential):
    def __init__(self, c, k=5):
        super().__init__(nn.Conv2d(c, c, k, 1, k // 2, groups=c, bias=False), _bn(c), nn.LeakyReLU(0.1),
                         nn.Conv2d(c, c, 1, bias=False), _bn(c), nn.LeakyReLU(0.1))


class Model(nn.Module):
    def __init__(self, channels=96, num_classes=80, levels=4):
        super().__init__()
        self.nc = num_classes
        self.towers = nn.ModuleList([nn.Sequential(DWSep(channels), DWSep(channels)) for _ in range(levels)])
        self.preds = nn.ModuleList([nn.Conv2d(channels, num_classes + 4 * (REG_MAX + 1), 1) for _ in range(levels)])
        self.register_buffer("project", torch.arange(REG_MAX + 1, dtype=torch.float32))

    def forward(self, p3, p4, p5, p6):
        outs = []
        for x, tower, pred in zip((p3, p4, p5, p6), self.towers, self.preds):
            y = pred(tower(x)).flatten(2).transpose(1, 2)  # [1, HW, nc + 32]
            cls, reg = y.split([self.nc, 4 * (REG_MAX + 1)], dim=-1)
            reg = F.softmax(reg.reshape(1, -1, 4, REG_MAX + 1), dim=-1)
            dist = (reg * self.project).sum(-1)  # distribution-to-distance integral (GFL)
            outs.append(torch.cat([torch.sigmoid(cls), dist], dim=-1))
        return torch.cat(outs, dim=1)


def get_inputs():
    return [torch.randn(1, 96, 40, 40), torch.randn(1, 96, 20, 20), torch.randn(1, 96, 10, 10), torch.randn(1, 96, 5, 5)]


def get_init_inputs():
    return [96, 80, 4]
