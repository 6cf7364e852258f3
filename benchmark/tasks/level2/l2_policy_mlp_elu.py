import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_policy_mlp_elu",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "Legged locomotion",
    "description": "Locomotion policy: observation normalisation, MLP 48 -> 512 -> 256 -> 128 with ELU, 12 joint targets (tanh-scaled)",
    "source": "ANYmal / legged_gym PPO actor (Rudin et al. 2022): 48-d proprioceptive observation, 12 actions",
}


class Model(nn.Module):
    def __init__(self, dobs, dact):
        super().__init__()
        self.register_buffer("mean", torch.randn(dobs) * 0.1)
        self.register_buffer("std", torch.rand(dobs) + 0.5)
        self.net = nn.Sequential(nn.Linear(dobs, 512), nn.ELU(), nn.Linear(512, 256), nn.ELU(),
                                 nn.Linear(256, 128), nn.ELU(), nn.Linear(128, dact))

    def forward(self, obs):
        return torch.tanh(self.net(torch.clamp((obs - self.mean) / self.std, -5, 5)))


def get_inputs():
    return [torch.randn(1, 48)]


def get_init_inputs():
    return [48, 12]
