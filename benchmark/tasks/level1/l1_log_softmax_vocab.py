import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_log_softmax_vocab",
    "level": 1,
    "domains": ["mobile"],
    "description": "Log-softmax over an 8192-entry vocabulary for 16 tokens",
    "source": "Small on-device LM head output (vocab 8192)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.log_softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(16, 8192) * 4]


def get_init_inputs():
    return []
