import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_softmax_segmentation",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "LR-ASPP",
    "description": "Softmax over 21 class channels of a 64x64 segmentation map",
    "source": "LR-ASPP MobileNetV3 (Howard et al. 2019) class scores, PASCAL VOC 21 classes at 1/2 of 128x128",
}


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(1, 21, 64, 64) * 3]


def get_init_inputs():
    return []
