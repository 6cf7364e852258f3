import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_se_block",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "description": "Squeeze-and-excitation: global pool, FC-ReLU-FC-sigmoid, channel rescale",
    "source": "SE-ResNet / SENet module, reduction 16 (28x28x128)",
}


class Model(nn.Module):
    def __init__(self, c, r=16):
        super().__init__()
        self.fc1 = nn.Linear(c, c // r)
        self.fc2 = nn.Linear(c // r, c)

    def forward(self, x):
        s = torch.sigmoid(self.fc2(F.relu(self.fc1(x.mean((2, 3))))))
        return x * s[:, :, None, None]


def get_inputs():
    return [torch.randn(1, 128, 28, 28)]


def get_init_inputs():
    return [128, 16]
