import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_centernet_peak_extract",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "CenterNet",
    "description": "CenterNet peak extraction: sigmoid heatmap, 3x3 max-pool NMS (keep where equal), top-100 scores and indices",
    "source": "CenterNet (Zhou et al. 2019) decoding on a 80-class 32x32 heatmap (128x128 input, stride 4)",
}


class Model(nn.Module):
    def forward(self, x):
        h = torch.sigmoid(x)
        keep = (F.max_pool2d(h, 3, 1, 1) == h).float()
        scores, idx = torch.topk((h * keep).flatten(1), 100)
        return scores, idx


def get_inputs():
    return [torch.randn(1, 80, 32, 32)]


def get_init_inputs():
    return []
