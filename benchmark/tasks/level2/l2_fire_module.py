import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_fire_module",
    "level": 2,
    "domains": ["aiot", "mobile"],
    "description": "SqueezeNet fire module: squeeze 1x1 + ReLU, expand 1x1 || 3x3 + ReLU, concat",
    "source": "SqueezeNet 1.1 fire 4 at 224 input (27x27x128 -> 32 -> 128 + 128)",
}


class Model(nn.Module):
    def __init__(self, cin, sq, e):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, sq, 1)
        self.e1 = nn.Conv2d(sq, e, 1)
        self.e3 = nn.Conv2d(sq, e, 3, padding=1)

    def forward(self, x):
        s = F.relu(self.squeeze(x))
        return torch.cat([F.relu(self.e1(s)), F.relu(self.e3(s))], 1)


def get_inputs():
    return [torch.randn(1, 128, 27, 27)]


def get_init_inputs():
    return [128, 32, 128]
