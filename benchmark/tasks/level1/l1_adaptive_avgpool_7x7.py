import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_adaptive_avgpool_7x7",
    "level": 1,
    "domains": ["mobile", "robotics"],
    "description": "Adaptive average pooling 14x14 -> 7x7",
    "source": "VGG / AlexNet-style adaptive pool before the classifier (14x14x256)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.adaptive_avg_pool2d(x, 7)


def get_inputs():
    return [torch.randn(1, 256, 14, 14)]


def get_init_inputs():
    return []
