import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_sobel_edge_magnitude",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "Classical vision",
    "description": "Grey conversion, 3x3 Sobel gradients (fixed conv weights), gradient magnitude and a normalised edge map",
    "source": "Edge / gradient front end of visual odometry and lane detection (Sobel, 240x320 frame)",
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        kx = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]])
        self.register_buffer("k", torch.stack([kx, kx.t()]).unsqueeze(1))
        self.register_buffer("grey", torch.tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1))

    def forward(self, img):
        g = F.conv2d((img * self.grey).sum(1, keepdim=True), self.k, padding=1)
        mag = torch.sqrt(g[:, :1] ** 2 + g[:, 1:] ** 2 + 1e-12)
        return mag / (mag.amax(dim=(2, 3), keepdim=True) + 1e-6)


def get_inputs():
    return [torch.rand(1, 3, 240, 320)]


def get_init_inputs():
    return []
