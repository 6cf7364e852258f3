import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_dgcnn_edgeconv",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "DGCNN",
    "description": "DGCNN EdgeConv: k-NN (k 16) by pairwise distance, gather neighbour features, [x_i, x_j - x_i], 1x1 conv-BN-LeakyReLU, max over neighbours",
    "source": "DGCNN (Wang et al. 2019) first EdgeConv on 512 points with 3-d input, 64 output channels",
}


def _bn(c, kind=nn.BatchNorm2d):
    bn = kind(c)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-0.2, 0.2)
    return bn


class Model(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.k = k
        self.conv = nn.Sequential(nn.Conv2d(2 * cin, cout, 1, bias=False), _bn(cout), nn.LeakyReLU(0.2))

    def forward(self, x):
        b, c, n = x.shape
        inner = -2 * torch.matmul(x.transpose(1, 2), x)
        sq = (x * x).sum(1, keepdim=True)
        idx = torch.topk(-sq.transpose(1, 2) - inner - sq, self.k, dim=-1)[1]
        xt = x.transpose(1, 2)
        nbr = torch.gather(xt.unsqueeze(1).expand(b, n, n, c), 2, idx.unsqueeze(-1).expand(b, n, self.k, c))
        ctr = xt.unsqueeze(2).expand(b, n, self.k, c)
        e = torch.cat([ctr, nbr - ctr], dim=-1).permute(0, 3, 1, 2)
        return self.conv(e).amax(dim=-1)


def get_inputs():
    return [torch.randn(1, 3, 512)]


def get_init_inputs():
    return [3, 64, 16]
