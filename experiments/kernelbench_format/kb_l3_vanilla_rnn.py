"""Vanilla RNN cell, batch 8, 1024 inputs, hidden 256, 128 outputs (KernelBench level 3, 33_VanillaRNN,
at its published sizes; written for this benchmark). `forward` stores the new hidden state in
`self.hidden`, so every call starts from the last one's state: its output depends on how often it ran,
and the evaluator refuses it with that reason."""
import torch
import torch.nn as nn

batch_size = 8
input_size = 1024
hidden_size = 256
output_size = 128
sequence_length = 256


class Model(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, output_size: int):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.hidden = torch.randn((batch_size, hidden_size))
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.tanh = nn.Tanh()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.hidden = self.hidden.to(x.device)
        combined = torch.cat((x, self.hidden), dim=1)
        self.hidden = self.tanh(self.i2h(combined))
        return self.h2o(self.hidden)


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size]
