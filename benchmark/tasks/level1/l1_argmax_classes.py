import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_argmax_classes",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "description": "Argmax over classes: per-pixel segmentation labels (int64 output)",
    "source": "BiSeNet / Fast-SCNN 19-class label map at 64x128",
}


class Model(nn.Module):
    def forward(self, x):
        return x.argmax(dim=1)


def get_inputs():
    return [torch.randn(1, 19, 64, 128)]


def get_init_inputs():
    return []
