import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_pad_letterbox",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "YOLOv5",
    "description": "Constant pad (value 0.447) of a 3x192x256 frame to 3x256x256 (32 rows top and bottom)",
    "source": "YOLOv5 letterbox: a 4:3 camera frame padded to a square 256x256 input with grey 114/255",
}


class Model(nn.Module):
    def forward(self, x):
        return F.pad(x, (0, 0, 32, 32), value=114.0 / 255.0)


def get_inputs():
    return [torch.rand(1, 3, 192, 256)]


def get_init_inputs():
    return []
