import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_blazeface",
    "level": 3,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "BlazeFace",
    "description": "BlazeFace front-camera face detector at 128x128: 5x5 stem, single and double BlazeBlocks (24 -> 96 channels), 2 + 6 anchors per cell at 16x16 and 8x8, box (16 values) and score heads",
    "source": "BlazeFace (Bazarevsky et al. 2019), MediaPipe front model layout, 128x128 RGB",
}


class Single(nn.Module):
    def __init__(self, cin, cout, s=1):
        super().__init__()
        self.s, self.pad = s, cout - cin
        self.dw = nn.Conv2d(cin, cin, 5, s, 2, groups=cin)
        self.pw = nn.Conv2d(cin, cout, 1)

    def forward(self, x):
        y = self.pw(self.dw(x))
        sc = F.max_pool2d(x, 2) if self.s == 2 else x
        if self.pad:
            sc = F.pad(sc, (0, 0, 0, 0, 0, self.pad))
        return F.relu(y + sc)


class Double(nn.Module):
    def __init__(self, cin, mid, cout, s=1):
        super().__init__()
        self.s, self.pad = s, cout - cin
        self.a = nn.Sequential(nn.Conv2d(cin, cin, 5, s, 2, groups=cin), nn.Conv2d(cin, mid, 1), nn.ReLU())
        self.b = nn.Sequential(nn.Conv2d(mid, mid, 5, 1, 2, groups=mid), nn.Conv2d(mid, cout, 1))

    def forward(self, x):
        sc = F.max_pool2d(x, 2) if self.s == 2 else x
        if self.pad:
            sc = F.pad(sc, (0, 0, 0, 0, 0, self.pad))
        return F.relu(self.b(self.a(x)) + sc)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 24, 5, 2, 2), nn.ReLU())
        self.b16 = nn.Sequential(Single(24, 24), Single(24, 28), Single(28, 32, 2), Single(32, 36), Single(36, 42),
                                 Double(42, 24, 48, 2), Double(48, 24, 96), Double(96, 24, 96))
        self.b8 = nn.Sequential(Double(96, 24, 96, 2), Double(96, 24, 96), Double(96, 24, 96))
        self.cls16, self.reg16 = nn.Conv2d(96, 2, 1), nn.Conv2d(96, 2 * 16, 1)
        self.cls8, self.reg8 = nn.Conv2d(96, 6, 1), nn.Conv2d(96, 6 * 16, 1)

    def forward(self, x):
        f16 = self.b16(self.stem(x))
        f8 = self.b8(f16)
        scores = torch.cat([self.cls16(f16).permute(0, 2, 3, 1).reshape(1, -1, 1),
                            self.cls8(f8).permute(0, 2, 3, 1).reshape(1, -1, 1)], dim=1)
        boxes = torch.cat([self.reg16(f16).permute(0, 2, 3, 1).reshape(1, -1, 16),
                           self.reg8(f8).permute(0, 2, 3, 1).reshape(1, -1, 16)], dim=1)
        return torch.sigmoid(scores), boxes


def get_inputs():
    return [torch.rand(1, 3, 128, 128) * 2 - 1]


def get_init_inputs():
    return []
