"""NVIDIA GPUs: CUDA C generated here on any machine, candidates run on a GPU host. L2 sources are
whole CUDA C kernels spliced into the generated source. Roofs come from the datasheet table below."""

from __future__ import annotations

from typing import Any

from leka.backends import Backend


def target_spec(arch: str = "sm_90", **_: Any) -> dict[str, Any]:
    return {"kind": "cuda", "arch": arch}


def unavailable() -> str | None:
    return ("it has no GPU / OpenCL runtime (CUDA runs on a GPU machine, OpenCL through TVM RPC; "
            "see leka/README.md)")


# fp32 non-tensor-core FMA peak (GFLOP/s) and HBM bandwidth (GB/s) by compute capability
PEAKS = {
    "sm_90": ("nvidia-h200", 67_000.0, 4_800.0),
    "sm_80": ("nvidia-a100", 19_500.0, 2_039.0),
    "sm_87": ("nvidia-jetson-orin", 5_300.0, 204.8),
    "sm_89": ("nvidia-l4", 30_300.0, 300.0),
}

BACKEND = Backend(
    name="cuda", target_spec=target_spec, device="cuda", remote_device="cuda", runs_on=("gpu", "rpc"),
    unavailable=unavailable, l2_languages={"cuda": "cu"}, domain="robotics", gpu=True,
    peaks=PEAKS, default_arch="sm_90",
)
