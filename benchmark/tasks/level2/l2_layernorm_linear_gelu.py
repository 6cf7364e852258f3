import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_layernorm_linear_gelu",
    "level": 2,
    "domains": ["mobile", "robotics"],
    "description": "LayerNorm + Linear 4x + GELU (first half of a transformer MLP)",
    "source": "DeiT-tiny MLP fc1 at 128x128 input (65 tokens, 192 -> 768)",
}


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)

    def forward(self, x):
        return F.gelu(self.fc(self.norm(x)))


def get_inputs():
    return [torch.randn(1, 65, 192)]


def get_init_inputs():
    return [192]
