import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_shufflenet_unit",
    "level": 2,
    "domains": ["mobile", "aiot"],
    "description": "ShuffleNetV2 stride-1 unit: channel split, 1x1-dw3x3-1x1 branch with BN/ReLU, concat, shuffle",
    "source": "ShuffleNetV2 x1.0 stage 2 at 224 input (28x28x116)",
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
    def __init__(self, c):
        super().__init__()
        b = c // 2
        self.pw1 = nn.Conv2d(b, b, 1, bias=False)
        self.bn1 = _bn(b)
        self.dw = nn.Conv2d(b, b, 3, 1, 1, groups=b, bias=False)
        self.bn2 = _bn(b)
        self.pw2 = nn.Conv2d(b, b, 1, bias=False)
        self.bn3 = _bn(b)

    def forward(self, x):
        x1, x2 = x.chunk(2, dim=1)
        y = F.relu(self.bn1(self.pw1(x2)))
        y = F.relu(self.bn3(self.pw2(self.bn2(self.dw(y)))))
        out = torch.cat([x1, y], 1)
        n, c, h, w = out.shape
        return out.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)


def get_inputs():
    return [torch.randn(1, 116, 28, 28)]


def get_init_inputs():
    return [116]
