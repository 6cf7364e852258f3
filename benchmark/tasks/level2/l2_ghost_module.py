import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_ghost_module",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "description": "GhostNet ghost module: primary 1x1 conv+BN+ReLU, cheap dw 3x3 conv+BN+ReLU, concat",
    "source": "GhostNet 1.0 stage 2 ghost module (28x28, 40 -> 120)",
}


def _bn(c, eps=1e-5):
    bn = nn.BatchNorm2d(c, eps=eps)
    # non-trivial running statistics so a wrong BN lowering shows up
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        init = cout // 2
        self.primary = nn.Conv2d(cin, init, 1, bias=False)
        self.bn1 = _bn(init)
        self.cheap = nn.Conv2d(init, init, 3, 1, 1, groups=init, bias=False)
        self.bn2 = _bn(init)

    def forward(self, x):
        y = F.relu(self.bn1(self.primary(x)))
        return torch.cat([y, F.relu(self.bn2(self.cheap(y)))], 1)


def get_inputs():
    return [torch.randn(1, 40, 28, 28)]


def get_init_inputs():
    return [40, 120]
