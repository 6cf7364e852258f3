import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_transpose_nchw_nhwc",
    "level": 1,
    "domains": ["mobile", "aiot"],
    "description": "Layout change NCHW -> NHWC (permute + contiguous)",
    "source": "Channels-last conversion (56x56x64)",
}


class Model(nn.Module):
    def forward(self, x):
        return x.permute(0, 2, 3, 1).contiguous()


def get_inputs():
    return [torch.randn(1, 64, 56, 56)]


def get_init_inputs():
    return []
