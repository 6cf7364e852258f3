import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l3_squeezenet1_1",
    "level": 3,
    "domains": ["aiot", "mobile"],
    "description": "SqueezeNet 1.1 (1000 classes) at 128x128: fire modules (squeeze 1x1, expand 1x1 || 3x3, concat)",
    "source": "SqueezeNet 1.1 (Iandola et al. 2016), torchvision layout, reduced 128x128 input (MCU-class classifier)",
}


class Fire(nn.Module):
    def __init__(self, cin, sq, e1, e3):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, sq, 1)
        self.e1 = nn.Conv2d(sq, e1, 1)
        self.e3 = nn.Conv2d(sq, e3, 3, padding=1)

    def forward(self, x):
        s = F.relu(self.squeeze(x))
        return torch.cat([F.relu(self.e1(s)), F.relu(self.e3(s))], 1)


class Model(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, 2), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), Fire(512, 64, 256, 256),
        )
        self.classifier = nn.Conv2d(512, num_classes, 1)

    def forward(self, x):
        x = F.relu(self.classifier(self.features(x)))
        return torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)


def get_inputs():
    return [torch.randn(1, 3, 128, 128)]


def get_init_inputs():
    return [1000]
