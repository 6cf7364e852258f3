import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_avgpool2d_3x3_pad",
    "level": 1,
    "domains": ["aiot"],
    "description": "Average pooling 3x3, stride 1, pad 1 (count_include_pad=False)",
    "source": "Inception / NASNet pool branch (17x17x128)",
}


class Model(nn.Module):
    def forward(self, x):
        return F.avg_pool2d(x, 3, 1, 1, count_include_pad=False)


def get_inputs():
    return [torch.randn(1, 128, 17, 17)]


def get_init_inputs():
    return []
