import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_channel_shuffle",
    "level": 1,
    "domains": ["mobile"],
    "description": "Channel shuffle with 2 groups (view, transpose, reshape)",
    "source": "ShuffleNetV2 x1.0 stage 2 (28x28x116)",
}


class Model(nn.Module):
    def forward(self, x):
        return x.view(1, 2, 58, 28, 28).transpose(1, 2).reshape(1, 116, 28, 28)


def get_inputs():
    return [torch.randn(1, 116, 28, 28)]


def get_init_inputs():
    return []
