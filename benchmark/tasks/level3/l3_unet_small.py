import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_unet_small",
    "level": 3,
    "domains": ["robotics", "mobile"],
    "description": "Small U-Net, 4 levels (16-32-64-128, 256 bottleneck): double conv3x3+BN+ReLU, maxpool down, "
                   "2x2 transposed-conv up, skip concat, 1x1 head to 2 classes",
    "source": "U-Net (Ronneberger et al. 2015) at 1/4 width for on-robot traversability / free-space segmentation, 96x96",
}


def _bn(c):
    bn = nn.BatchNorm2d(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class DoubleConv(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.Conv2d(cin, cout, 3, padding=1, bias=False), _bn(cout), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), _bn(cout), nn.ReLU())


class Model(nn.Module):
    def __init__(self, cin=3, classes=2, base=16):
        super().__init__()
        ch = [base * 2**i for i in range(5)]
        self.downs = nn.ModuleList([DoubleConv(cin, ch[0])] + [DoubleConv(ch[i], ch[i + 1]) for i in range(3)])
        self.bottleneck = DoubleConv(ch[3], ch[4])
        self.ups = nn.ModuleList([nn.ConvTranspose2d(ch[i + 1], ch[i], 2, 2) for i in reversed(range(4))])
        self.dec = nn.ModuleList([DoubleConv(2 * ch[i], ch[i]) for i in reversed(range(4))])
        self.head = nn.Conv2d(ch[0], classes, 1)

    def forward(self, x):
        skips = []
        for d in self.downs:
            x = d(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bottleneck(x)
        for up, dec, s in zip(self.ups, self.dec, reversed(skips)):
            x = dec(torch.cat([s, up(x)], 1))
        return self.head(x)


def get_inputs():
    return [torch.randn(1, 3, 96, 96)]


def get_init_inputs():
    return [3, 2, 16]
