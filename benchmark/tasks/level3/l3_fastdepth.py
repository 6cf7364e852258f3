import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_fastdepth",
    "level": 3,
    "domains": ["robotics", "aiot"],
    "family": "FastDepth",
    "description": "FastDepth monocular depth: MobileNetV1 encoder, NNConv5 decoder (dw5x5 + pw, nearest 2x up) with additive skips, 1x1 to depth",
    "source": "FastDepth (Wofk et al. 2019) at 1/2 width on a 128x128 frame (embedded robot depth estimation)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


ENC = [(16, 32, 1), (32, 64, 2), (64, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1),
       (256, 256, 1), (256, 256, 1), (256, 256, 1), (256, 256, 1), (256, 512, 2), (512, 512, 1)]


def _dws(cin, cout, s, k=3):
    return nn.Sequential(nn.Conv2d(cin, cin, k, s, k // 2, groups=cin, bias=False), _bn(cin), nn.ReLU(),
                         nn.Conv2d(cin, cout, 1, bias=False), _bn(cout), nn.ReLU())


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), _bn(16), nn.ReLU())
        self.enc = nn.ModuleList(_dws(*c) for c in ENC)
        self.dec = nn.ModuleList(_dws(cin, cout, 1, 5) for cin, cout in
                                 [(512, 256), (256, 128), (128, 64), (64, 32), (32, 16)])
        self.out = nn.Conv2d(16, 1, 1)
        # with random weights the depth head's pre-ReLU output was negative everywhere (an all-zero
        # reference, which a constant kernel would pass): its bias puts the frame around zero instead
        nn.init.constant_(self.out.bias, 0.06)

    def forward(self, x):
        x = self.stem(x)
        skips = {}
        for i, m in enumerate(self.enc):
            x = m(x)
            if i in (0, 2, 4):
                skips[i] = x
        for j, m in enumerate(self.dec):
            x = F.interpolate(m(x), scale_factor=2, mode="nearest")
            skip = {1: 4, 2: 2, 3: 0}.get(j)
            if skip is not None:
                x = x + skips[skip]
        return F.relu(self.out(x))


def get_inputs():
    return [torch.randn(1, 3, 128, 128)]


def get_init_inputs():
    return []
