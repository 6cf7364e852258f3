import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_geglu_mlp",
    "level": 2,
    "domains": ["mobile"],
    "description": "GeGLU MLP: down(gelu_tanh(gate(x)) * up(x))",
    "source": "Gemma-style MLP scaled to d_model 384, FFN 1536, 16 tokens",
}


class Model(nn.Module):
    def __init__(self, d, ff):
        super().__init__()
        self.gate = nn.Linear(d, ff, bias=False)
        self.up = nn.Linear(d, ff, bias=False)
        self.down = nn.Linear(ff, d, bias=False)

    def forward(self, x):
        return self.down(F.gelu(self.gate(x), approximate="tanh") * self.up(x))


def get_inputs():
    return [torch.randn(1, 16, 384)]


def get_init_inputs():
    return [384, 1536]
