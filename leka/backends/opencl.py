"""OpenCL devices (e.g. a Mali GPU on an RK3588 board): OpenCL C generated here, candidates run
through TVM RPC on a board whose runtime has OpenCL (the pip wheel has none). L2 sources are whole
OpenCL C kernels spliced into the generated source."""

from __future__ import annotations

from typing import Any

from leka.backends import Backend


def target_spec(**_: Any) -> dict[str, Any]:
    return {"kind": "opencl"}


def unavailable() -> str | None:
    return ("it has no GPU / OpenCL runtime (CUDA runs on a GPU machine, OpenCL through TVM RPC; "
            "see leka/README.md)")


BACKEND = Backend(
    name="opencl", target_spec=target_spec, device="opencl", remote_device="cl", runs_on=("rpc",),
    unavailable=unavailable, l2_languages={"opencl": "cl"}, domain="aiot", gpu=True,
    # RK3588-class board: a guess until measured over RPC
    peaks={"opencl": ("mobile-gpu-mali-g610", 500.0, 50.0)}, default_arch="opencl",
)
