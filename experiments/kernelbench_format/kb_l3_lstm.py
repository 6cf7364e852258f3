"""LSTM, 6 layers, batch 10, 512 steps of 128 features, hidden 256, last step to 10 outputs (KernelBench
level 3, 35_LTSMNet, at its published sizes; written for this benchmark). `forward` rebinds `self.h0`
and `self.c0` as the original does: the same values on every call, so it is a pure function of `x`."""
import torch
import torch.nn as nn

batch_size = 10
sequence_length = 512
input_size = 128
hidden_size = 256
num_layers = 6
output_size = 10
dropout = 0.0


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, output_size, dropout=0.0):
        super().__init__()
        self.h0 = torch.randn((num_layers, batch_size, hidden_size))
        self.c0 = torch.randn((num_layers, batch_size, hidden_size))
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, dropout=dropout,
                            bidirectional=False)
        self.fc = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        self.h0 = self.h0.to(x.device)
        self.c0 = self.h0.to(x.device)
        out, _ = self.lstm(x, (self.h0, self.c0))
        return self.fc(out[:, -1, :])


def get_inputs():
    return [torch.randn(batch_size, sequence_length, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers, output_size, dropout]
