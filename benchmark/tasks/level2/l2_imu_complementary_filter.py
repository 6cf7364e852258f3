import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_imu_complementary_filter",
    "level": 2,
    "domains": ["aiot"],
    "family": "IMU fusion",
    "description": "Complementary filter over 256 IMU steps, unrolled as a closed form: alpha^k weighted cumulative sums of gyro rates blended with small-angle accelerometer tilt",
    "source": "Attitude estimation on a wearable / drone IMU (complementary filter, alpha 0.98, 100 Hz), 256 samples of roll and pitch",
}


class Model(nn.Module):
    def __init__(self, n, alpha, dt):
        super().__init__()
        k = torch.arange(n).float()
        # theta_t = sum_{s<=t} alpha^(t-s) * ((1 - alpha) * acc_s + alpha * dt * gyro_s): a lower-triangular kernel
        w = torch.tril(alpha ** (k[:, None] - k[None, :]).clamp(min=0)) * torch.tril(torch.ones(n, n))
        self.register_buffer("w", w)
        self.alpha, self.dt = alpha, dt

    def forward(self, gyro, acc):
        # tilt from gravity in the small-angle form MCU filters use without a math library (z up: angle ~ its
        # tangent); TVM's OpenCL C generation also emits atanf / atan2f, which OpenCL C does not have
        tilt = torch.stack([acc[..., 1] / acc[..., 2],
                            -acc[..., 0] / torch.sqrt(acc[..., 1] ** 2 + acc[..., 2] ** 2)], -1)
        drive = (1 - self.alpha) * tilt + self.alpha * self.dt * gyro
        return torch.matmul(self.w, drive)


def get_inputs():
    return [torch.randn(1, 256, 2) * 0.5, torch.randn(1, 256, 3) + torch.tensor([0.0, 0.0, 9.81])]


def get_init_inputs():
    return [256, 0.98, 0.01]
