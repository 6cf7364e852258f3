"""Tall-skinny matmul with a 32768 x 32768 output (4 GiB of float32), as in KernelBench level 1
(tall-skinny matrix multiplication, current release: M = 16384 * 2, N = 16 * 2)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 16384 * 2
N = 16 * 2


def get_inputs():
    return [torch.rand(M, N), torch.rand(N, M)]


def get_init_inputs():
    return []
