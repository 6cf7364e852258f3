import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_vad_frame_classifier",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "VAD",
    "description": "Voice activity detection per frame: conv1d k3 over 40 log-mel features (-> 32), ReLU, conv1d k3 (-> 32), ReLU, 1x1 to 1, sigmoid",
    "source": "Lightweight CNN voice activity detector (e.g. MarbleNet-style, Jia et al. 2021) over 100 frames of 40 log-mel",
}


class Model(nn.Module):
    def __init__(self, cin, c):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(cin, c, 3, padding=1), nn.ReLU(), nn.Conv1d(c, c, 3, padding=1),
                                 nn.ReLU(), nn.Conv1d(c, 1, 1))

    def forward(self, x):
        return torch.sigmoid(self.net(x))


def get_inputs():
    return [torch.randn(1, 40, 100)]


def get_init_inputs():
    return [40, 32]
