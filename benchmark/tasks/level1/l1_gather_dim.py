import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_gather_dim",
    "level": 1,
    "domains": ["robotics", "mobile"],
    "description": "torch.gather along the anchor dim: pick the 100 top-k candidates' 4 box coords",
    "source": "Detection post-processing gather (2100 anchors x 4 coords, 100 kept)",
}


class Model(nn.Module):
    def forward(self, boxes, idx):
        return torch.gather(boxes, 1, idx[:, :, None].expand(-1, -1, 4))


def get_inputs():
    return [torch.randn(1, 2100, 4), torch.randint(0, 2100, (1, 100))]


def get_init_inputs():
    return []
