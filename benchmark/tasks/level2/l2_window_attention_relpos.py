import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_window_attention_relpos",
    "level": 2,
    "domains": ["mobile", "robotics"],
    "description": "Swin window attention: 7x7 windows, 3 heads, qkv Linear, relative position bias gathered from a table, softmax, proj",
    "source": "Swin-T stage 1 at 112x112 input (28x28x96 -> 16 windows of 49 tokens)",
}


class Model(nn.Module):
    def __init__(self, d, nh, ws):
        super().__init__()
        self.nh, self.hd, self.ws = nh, d // nh, ws
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.table = nn.Parameter(torch.randn((2 * ws - 1) ** 2, nh) * 0.5)
        c = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")).flatten(1)
        rel = (c[:, :, None] - c[:, None, :]).permute(1, 2, 0) + (ws - 1)
        self.register_buffer("index", (rel[..., 0] * (2 * ws - 1) + rel[..., 1]).flatten())

    def forward(self, x):
        b, h, w, d = x.shape
        ws, n = self.ws, self.ws * self.ws
        win = x.view(b, h // ws, ws, w // ws, ws, d).permute(0, 1, 3, 2, 4, 5).reshape(-1, n, d)
        q, k, v = self.qkv(win).view(-1, n, 3, self.nh, self.hd).permute(2, 0, 3, 1, 4)
        bias = self.table[self.index].view(n, n, self.nh).permute(2, 0, 1)
        att = torch.softmax(q @ k.transpose(-2, -1) * self.hd ** -0.5 + bias, -1)
        y = self.proj((att @ v).transpose(1, 2).reshape(-1, n, d))
        return y.view(b, h // ws, w // ws, ws, ws, d).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, d)


def get_inputs():
    return [torch.randn(1, 28, 28, 96)]


def get_init_inputs():
    return [96, 3, 7]
