import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l1_quat_to_rotmat",
    "level": 1,
    "domains": ["robotics", "aiot"],
    "family": "Pose estimation",
    "description": "Unit quaternions (w, x, y, z) to 3x3 rotation matrices for 1024 poses",
    "source": "6-DoF pose heads and IMU attitude (e.g. PoseCNN, VIO filters): quaternion -> rotation matrix, 1024 poses",
}


class Model(nn.Module):
    def forward(self, q):
        q = q / q.norm(dim=-1, keepdim=True)
        w, x, y, z = q.unbind(-1)
        r = torch.stack([
            1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
        ], dim=-1)
        return r.reshape(q.shape[:-1] + (3, 3))


def get_inputs():
    return [torch.randn(1, 1024, 4)]


def get_init_inputs():
    return []
