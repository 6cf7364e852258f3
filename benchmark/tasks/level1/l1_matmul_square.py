import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_matmul_square",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "Square fp32 matmul 256x256x256",
    "source": "MobileBERT / ViT-tiny projection block size",
}


class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(256, 256), torch.randn(256, 256)]


def get_init_inputs():
    return []
