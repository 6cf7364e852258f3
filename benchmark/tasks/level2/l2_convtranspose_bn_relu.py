import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_convtranspose_bn_relu",
    "level": 2,
    "domains": ["robotics", "mobile"],
    "description": "Transposed conv 2x2/2 + BatchNorm + ReLU (learned upsampling)",
    "source": "U-Net / FCN decoder up-block (28x28x64 -> 56x56x32)",
}


def _bn(c, eps=1e-5):
    bn = nn.BatchNorm2d(c, eps=eps)
    # non-trivial running statistics so a wrong BN lowering shows up
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cout, 2, 2, bias=False)
        self.bn = _bn(cout)

    def forward(self, x):
        return F.relu(self.bn(self.up(x)))


def get_inputs():
    return [torch.randn(1, 64, 28, 28)]


def get_init_inputs():
    return [64, 32]
