import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_maxpool1d_sensor",
    "level": 1,
    "domains": ["aiot"],
    "family": "HAR-CNN",
    "description": "1-D max pooling, kernel 2, stride 2, over 64 channels x 128 samples",
    "source": "1-D CNN for human activity recognition on UCI-HAR (128-sample accelerometer windows), first pool",
}


class Model(nn.Module):
    def forward(self, x):
        return F.max_pool1d(x, 2, 2)


def get_inputs():
    return [torch.randn(1, 64, 128)]


def get_init_inputs():
    return []
