import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_crnn_ocr_head",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "CRNN",
    "description": "CRNN text recognition head: collapse the height of a conv feature map by a conv, per-column linear to 37 characters, log-softmax (CTC input)",
    "source": "CRNN (Shi et al. 2016) on a 32x128 text crop: 256 x 1 x 32 feature sequence, 36 characters + blank (PP-OCR-mobile style, without the LSTM)",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, c, h, nc):
        super().__init__()
        self.collapse = nn.Sequential(nn.Conv2d(c, c, (h, 1), bias=False), _bn(c), nn.ReLU())
        self.fc = nn.Linear(c, nc)

    def forward(self, x):
        y = self.collapse(x).squeeze(2).transpose(1, 2)
        return F.log_softmax(self.fc(y), dim=-1)


def get_inputs():
    return [torch.randn(1, 256, 2, 32)]


def get_init_inputs():
    return [256, 2, 37]
