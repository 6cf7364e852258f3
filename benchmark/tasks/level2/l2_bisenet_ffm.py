import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_bisenet_ffm",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "family": "BiSeNet",
    "description": "BiSeNet feature fusion module: concat spatial and context paths, 1x1 conv-BN-ReLU, SE-style channel attention, residual",
    "source": "BiSeNet (Yu et al. 2018) FFM at 1/8 resolution (16x16, 128 + 128 channels) for a 128x128 input",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, cin, c):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(cin, c, 1, bias=False), _bn(c), nn.ReLU())
        self.fc1 = nn.Conv2d(c, c // 4, 1)
        self.fc2 = nn.Conv2d(c // 4, c, 1)

    def forward(self, sp, cx):
        f = self.conv(torch.cat([sp, cx], dim=1))
        a = torch.sigmoid(self.fc2(F.relu(self.fc1(F.adaptive_avg_pool2d(f, 1)))))
        return f + f * a


def get_inputs():
    return [torch.randn(1, 128, 16, 16), torch.randn(1, 128, 16, 16)]


def get_init_inputs():
    return [256, 128]
