import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_bias_add_broadcast",
    "level": 1,
    "domains": ["robotics"],
    "description": "Broadcast add of a per-channel bias over NHWC rows",
    "source": "Channels-last bias add (ConvNeXt pointwise, 20x20x384)",
}


class Model(nn.Module):
    def forward(self, x, b):
        return x + b


def get_inputs():
    return [torch.randn(1, 20, 20, 384), torch.randn(384)]


def get_init_inputs():
    return []
