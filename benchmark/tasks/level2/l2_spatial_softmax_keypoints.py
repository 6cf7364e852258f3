import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_spatial_softmax_keypoints",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "Spatial softmax",
    "description": "Spatial soft-argmax: per-channel softmax over the 32x32 map, expected x and y coordinates in [-1, 1]",
    "source": "Deep spatial autoencoders / visuomotor policies (Levine et al. 2016, Finn et al. 2016): 32 keypoints from a 32x32 feature map",
}


class Model(nn.Module):
    def __init__(self, h, w):
        super().__init__()
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
        self.register_buffer("pos", torch.stack([xs.flatten(), ys.flatten()], dim=1))

    def forward(self, x):
        n, c, h, w = x.shape
        p = torch.softmax(x.view(n, c, h * w), dim=-1)
        return torch.matmul(p, self.pos)


def get_inputs():
    return [torch.randn(1, 32, 32, 32) * 3]


def get_init_inputs():
    return [32, 32]
