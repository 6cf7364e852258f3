import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_gated_conv_denoise",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "Speech enhancement",
    "description": "Gated 2-D conv block: conv 3x3 to 2C, GLU over channels, BN, residual (a T-F mask estimator block)",
    "source": "Gated convolutional recurrent networks for speech enhancement (Tan & Wang 2019) encoder block, 32 ch on 16 frames x 64 bins",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, 2 * c, 3, padding=1)
        self.bn = _bn(c)

    def forward(self, x):
        return x + self.bn(F.glu(self.conv(x), dim=1))


def get_inputs():
    return [torch.randn(1, 32, 16, 64)]


def get_init_inputs():
    return [32]
