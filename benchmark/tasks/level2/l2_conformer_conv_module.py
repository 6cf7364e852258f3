import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_conformer_conv_module",
    "level": 2,
    "domains": ["aiot", "mobile"],
    "description": "Conformer convolution module: LN, pointwise conv 2x + GLU, depthwise conv1d k=15, BN, SiLU, pointwise conv, residual",
    "source": "Conformer-S speech encoder conv module (d 144, 100 frames)",
}


class Model(nn.Module):
    def __init__(self, d, k):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.pw1 = nn.Conv1d(d, 2 * d, 1)
        self.dw = nn.Conv1d(d, d, k, padding=k // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.bn.running_mean.uniform_(-0.2, 0.2)
        self.bn.running_var.uniform_(0.5, 1.5)
        self.pw2 = nn.Conv1d(d, d, 1)

    def forward(self, x):
        y = self.norm(x).transpose(1, 2)
        y = F.glu(self.pw1(y), dim=1)
        y = self.pw2(F.silu(self.bn(self.dw(y))))
        return x + y.transpose(1, 2)


def get_inputs():
    return [torch.randn(1, 100, 144)]


def get_init_inputs():
    return [144, 15]
