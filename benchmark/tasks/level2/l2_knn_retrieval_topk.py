import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_knn_retrieval_topk",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "Place recognition",
    "description": "Embedding retrieval: L2-normalise a 256-d query, cosine similarity against 4096 stored keys, top-5 scores and indices",
    "source": "Visual place recognition / loop closure (NetVLAD-style global descriptors, 4096-frame map) on a robot",
}


class Model(nn.Module):
    def forward(self, q, keys):
        q = q / q.norm(dim=-1, keepdim=True)
        return torch.topk(q @ keys.t(), 5, dim=-1)


def get_inputs():
    return [torch.randn(1, 256), F.normalize(torch.randn(4096, 256), dim=-1)]


def get_init_inputs():
    return []
