import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_mlp_classifier_head",
    "level": 2,
    "domains": ["aiot", "mobile"],
    "description": "Classifier head: global average pool, dropout (eval: identity), Linear + hardswish, Linear",
    "source": "MobileNetV3-Small classifier (7x7x576 -> 1024 -> 1000)",
}


class Model(nn.Module):
    def __init__(self, c, h, n):
        super().__init__()
        self.fc1 = nn.Linear(c, h)
        self.drop = nn.Dropout(0.2)
        self.fc2 = nn.Linear(h, n)

    def forward(self, x):
        return self.fc2(self.drop(F.hardswish(self.fc1(x.mean((2, 3))))))


def get_inputs():
    return [torch.randn(1, 576, 7, 7)]


def get_init_inputs():
    return [576, 1024, 1000]
