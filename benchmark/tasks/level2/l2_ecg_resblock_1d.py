import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_ecg_resblock_1d",
    "level": 2,
    "domains": ["aiot"],
    "family": "ECG ResNet",
    "description": "1-D residual block for ECG: BN-ReLU-conv1d k16 s2, BN-ReLU-conv1d k16, max-pool shortcut",
    "source": "Cardiologist-level arrhythmia ResNet (Hannun et al. 2019) block on a 640-sample single-lead ECG, 64 channels (320 samples at this block)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, c, k):
        super().__init__()
        self.bn1, self.bn2 = _bn(c, nn.BatchNorm1d), _bn(c, nn.BatchNorm1d)
        self.conv1 = nn.Conv1d(c, c, k, stride=2, padding=k // 2 - 1, bias=False)
        self.conv2 = nn.Conv1d(c, c, k + 1, padding=k // 2, bias=False)

    def forward(self, x):
        y = self.conv1(F.relu(self.bn1(x)))
        y = self.conv2(F.relu(self.bn2(y)))
        return y + F.max_pool1d(x, 2)


def get_inputs():
    return [torch.randn(1, 64, 320)]


def get_init_inputs():
    return [64, 16]
