import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_clip_similarity_logits",
    "level": 2,
    "domains": ["mobile", "robotics", "aiot"],
    "family": "CLIP",
    "description": "CLIP zero-shot scores: L2-normalise an image embedding and 100 text embeddings, cosine similarity x logit scale 100, softmax",
    "source": "CLIP (Radford et al. 2021) zero-shot classification head, 512-d embeddings, 100 prompts, on-device retrieval",
}


class Model(nn.Module):
    def forward(self, img, txt):
        img = img / img.norm(dim=-1, keepdim=True)
        txt = txt / txt.norm(dim=-1, keepdim=True)
        return torch.softmax(100.0 * img @ txt.t(), dim=-1)


def get_inputs():
    return [torch.randn(1, 512), torch.randn(100, 512)]


def get_init_inputs():
    return []
