"""Standard 2-D convolution, batch 16, 3 -> 64 channels, 3x3, 256 x 256 (KernelBench level 1,
conv standard 2D square input square kernel, first release)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, (kernel_size, kernel_size), bias=False)

    def forward(self, x):
        return self.conv2d(x)


batch_size = 16
in_channels = 3
out_channels = 64
kernel_size = 3
width = 256
height = 256


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
