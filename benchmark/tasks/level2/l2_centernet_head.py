import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_centernet_head",
    "level": 2,
    "domains": ["robotics", "mobile"],
    "description": "CenterNet head: 3x3 conv+ReLU+1x1 for heatmap/size/offset; sigmoid heatmap, 3x3 max-pool peak NMS",
    "source": "CenterNet-ResNet18 head at 256x256 (64x64x64, 10 classes)",
}


class Model(nn.Module):
    def __init__(self, c, classes, head):
        super().__init__()
        self.hm = nn.Sequential(nn.Conv2d(c, head, 3, padding=1), nn.ReLU(), nn.Conv2d(head, classes, 1))
        self.wh = nn.Sequential(nn.Conv2d(c, head, 3, padding=1), nn.ReLU(), nn.Conv2d(head, 2, 1))
        self.reg = nn.Sequential(nn.Conv2d(c, head, 3, padding=1), nn.ReLU(), nn.Conv2d(head, 2, 1))

    def forward(self, x):
        heat = torch.sigmoid(self.hm(x))
        keep = (F.max_pool2d(heat, 3, 1, 1) == heat).float()
        return heat * keep, self.wh(x), self.reg(x)


def get_inputs():
    return [torch.randn(1, 64, 32, 32)]


def get_init_inputs():
    return [64, 10, 32]
