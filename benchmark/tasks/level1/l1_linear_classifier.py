import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_linear_classifier",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "description": "Fully connected classifier 1280 -> 1000 with bias, batch 1",
    "source": "MobileNetV2 / EfficientNet-B0 classifier head",
}


class Model(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)

    def forward(self, x):
        return self.fc(x)


def get_inputs():
    return [torch.randn(1, 1280)]


def get_init_inputs():
    return [1280, 1000]
