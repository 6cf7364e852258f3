import torch
import torch.nn as nn
import torch.nn.functional as F

META = {
    "id": "l2_rgb_to_hsv_threshold",
    "level": 2,
    "domains": ["robotics", "aiot"],
    "family": "Color segmentation",
    "description": "RGB to HSV written out (max / min, hue sectors) and an HSV range mask, as colour-marker tracking does",
    "source": "Colour-blob tracking for robots and AIoT cameras (OpenCV cvtColor + inRange), 240x320 frame",
}


class Model(nn.Module):
    def forward(self, img):
        r, g, b = img.unbind(1)
        mx, _ = img.max(1)
        mn, _ = img.min(1)
        d = mx - mn + 1e-6
        h = torch.where(mx == r, (g - b) / d, torch.where(mx == g, 2.0 + (b - r) / d, 4.0 + (r - g) / d))
        h = torch.remainder(h / 6.0, 1.0)
        s = d / (mx + 1e-6)
        mask = ((h > 0.55) & (h < 0.7) & (s > 0.4) & (mx > 0.2)).float()
        return torch.stack([h, s, mx], 1), mask


def get_inputs():
    return [torch.rand(1, 3, 240, 320)]


def get_init_inputs():
    return []
