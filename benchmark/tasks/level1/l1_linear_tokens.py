import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_linear_tokens",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "Linear layer over a token sequence: 64 x 512 @ 512 x 512 + bias",
    "source": "Qwen2-style q projection at d_model 512, 64-token prefill",
}


class Model(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)

    def forward(self, x):
        return self.fc(x)


def get_inputs():
    return [torch.randn(1, 64, 512)]


def get_init_inputs():
    return [512, 512]
