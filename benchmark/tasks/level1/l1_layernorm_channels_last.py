import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_layernorm_channels_last",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "ConvNeXt",
    "description": "LayerNorm over the channel dimension of an NHWC map (96 channels, eps 1e-6)",
    "source": "ConvNeXt-Tiny block norm (after the permute to NHWC) at 32x32x96",
}


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm = nn.LayerNorm(c, eps=1e-6)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.2, 0.2)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(1, 32, 32, 96)]


def get_init_inputs():
    return [96]
