import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_conv1d_kws",
    "level": 1,
    "domains": ["aiot"],
    "description": "Conv1d over time, kernel 3, 40 MFCC channels -> 64, stride 1",
    "source": "TC-ResNet8 keyword spotting first layer (40 MFCC x 101 frames, Google Speech Commands)",
}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, 3, padding=1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 40, 101)]


def get_init_inputs():
    return [40, 64]
