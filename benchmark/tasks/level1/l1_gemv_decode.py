import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_gemv_decode",
    "level": 1,
    "domains": ["mobile", "robotics", "aiot"],
    "description": "GEMV: one token (1x1024) times a 1024x1024 weight, as in LLM decode",
    "source": "Qwen2-0.5B-class decode projection (d_model ~1024), batch 1",
}


class Model(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.proj = nn.Linear(d_in, d_out, bias=False)

    def forward(self, x):
        return self.proj(x)


def get_inputs():
    return [torch.randn(1, 1024)]


def get_init_inputs():
    return [1024, 1024]
