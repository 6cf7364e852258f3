import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_adaptive_avgpool_uneven",
    "level": 1,
    "domains": ["robotics"],
    "description": "Adaptive average pooling 20x30 -> 6x6 (uneven windows)",
    "source": "PSPNet pyramid pooling bin 6 (20x30x128 feature map)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.adaptive_avg_pool2d(x, 6)


def get_inputs():
    return [torch.randn(1, 128, 20, 30)]


def get_init_inputs():
    return []
