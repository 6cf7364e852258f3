import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_relu",
    "level": 1,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "ResNet-18",
    "description": "ReLU over a 56x56x64 activation",
    "source": "ResNet-18 stem activation at a 224x224 input (56x56x64 after the max pool)",
}


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(1, 64, 56, 56)]


def get_init_inputs():
    return []
