import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_mbconv_se_silu",
    "level": 2,
    "domains": ["mobile"],
    "description": "EfficientNet MBConv: expand 1x1 + dw 5x5 + SE (SiLU / sigmoid) + project, residual",
    "source": "EfficientNet-B0 stage 3 repeat block (28x28x40, expand 6, SE 10)",
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
    def __init__(self, c, e=6, k=5):
        super().__init__()
        hid, sq = c * e, max(1, c // 4)
        self.expand = nn.Conv2d(c, hid, 1, bias=False)
        self.bn1 = _bn(hid)
        self.dw = nn.Conv2d(hid, hid, k, 1, k // 2, groups=hid, bias=False)
        self.bn2 = _bn(hid)
        self.se1 = nn.Conv2d(hid, sq, 1)
        self.se2 = nn.Conv2d(sq, hid, 1)
        self.project = nn.Conv2d(hid, c, 1, bias=False)
        self.bn3 = _bn(c)

    def forward(self, x):
        y = F.silu(self.bn1(self.expand(x)))
        y = F.silu(self.bn2(self.dw(y)))
        s = torch.sigmoid(self.se2(F.silu(self.se1(y.mean((2, 3), keepdim=True)))))
        return x + self.bn3(self.project(y * s))


def get_inputs():
    return [torch.randn(1, 40, 28, 28)]


def get_init_inputs():
    return [40, 6, 5]
