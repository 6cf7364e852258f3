import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_swiglu_mlp",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "description": "SwiGLU MLP: down(silu(gate(x)) * up(x)), no biases",
    "source": "Llama-style MLP at d_model 512, FFN 1536, 16 tokens",
}


class Model(nn.Module):
    def __init__(self, d, ff):
        super().__init__()
        self.gate = nn.Linear(d, ff, bias=False)
        self.up = nn.Linear(d, ff, bias=False)
        self.down = nn.Linear(ff, d, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


def get_inputs():
    return [torch.randn(1, 16, 512)]


def get_init_inputs():
    return [512, 1536]
