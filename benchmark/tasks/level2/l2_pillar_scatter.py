import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_pillar_scatter",
    "level": 2,
    "domains": ["robotics"],
    "description": "PointPillars scatter: place 1500 pillar features into a 64 x 64 x 64 BEV canvas at their grid cells",
    "source": "PointPillars PointPillarsScatter onto a cropped 64x64 pillar grid (unique cells)",
}


class Model(nn.Module):
    def __init__(self, c, h, w):
        super().__init__()
        self.c, self.h, self.w = c, h, w

    def forward(self, feats, cell):
        canvas = torch.zeros(self.c, self.h * self.w, dtype=feats.dtype)
        # canvas[:, cell] = feats.t(), spelled with both index tensors (TVM's IndexPut needs one per dim)
        canvas = canvas.index_put((torch.arange(self.c)[:, None], cell[None, :]), feats.t())
        return canvas.reshape(1, self.c, self.h, self.w)


def get_inputs():
    return [torch.randn(1500, 64), torch.randperm(64 * 64)[:1500]]


def get_init_inputs():
    return [64, 64, 64]
