import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_tcn_gesture",
    "level": 3,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "TCN",
    "description": "Temporal convolutional network for IMU gesture recognition: 4 residual levels of dilated causal conv1d (k 3, dilation 1/2/4/8, 64 channels) with BN-ReLU, last-step linear to 10 gestures",
    "source": "TCN (Bai et al. 2018) on 6-axis IMU windows (128 samples at 100 Hz), wrist-worn gesture recognition",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Level(nn.Module):
    def __init__(self, cin, c, d):
        super().__init__()
        self.pad = 2 * d
        self.c1 = nn.Conv1d(cin, c, 3, dilation=d)
        self.c2 = nn.Conv1d(c, c, 3, dilation=d)
        self.bn1, self.bn2 = _bn(c, nn.BatchNorm1d), _bn(c, nn.BatchNorm1d)
        self.down = nn.Conv1d(cin, c, 1) if cin != c else nn.Identity()

    def forward(self, x):
        y = F.relu(self.bn1(self.c1(F.pad(x, (self.pad, 0)))))
        y = F.relu(self.bn2(self.c2(F.pad(y, (self.pad, 0)))))
        return F.relu(y + self.down(x))


class Model(nn.Module):
    def __init__(self, cin, c, nc):
        super().__init__()
        self.levels = nn.Sequential(*[Level(cin if i == 0 else c, c, 2 ** i) for i in range(4)])
        self.fc = nn.Linear(c, nc)

    def forward(self, x):
        return self.fc(self.levels(x)[:, :, -1])


def get_inputs():
    return [torch.randn(1, 6, 128)]


def get_init_inputs():
    return [6, 64, 10]
