"""Whether a backend can run here: one clear line naming what is missing when it cannot.

`llvm` always runs. `cuda` needs a CUDA GPU that TVM sees (driver + device) and a CUDA C compiler
for TVM's generated kernels (nvcc on PATH, or NVRTC through the cuda-python bindings). `opencl`
runs through TVM RPC (leka/README.md), not on this machine.
"""

from __future__ import annotations

import shutil

from leka.types import UserError


def _has_nvrtc() -> bool:
    try:
        import cuda.bindings.nvrtc  # noqa: F401 - TVM's NVRTC path compiles through these bindings
    except ImportError:
        return False
    return True


def missing_for(backend: str) -> str | None:
    """None when `backend` can run on this machine, else one line saying what is missing."""
    if backend == "llvm":
        return None
    if backend == "cuda":
        from leka import tvm_adapter as A

        if A.cuda_device_info() is None:
            return ("backend 'cuda' needs an NVIDIA GPU and its driver, and TVM sees none on this machine "
                    "(tvm.cuda(0).exist is False); run it on a GPU host")
        if not shutil.which("nvcc") and not _has_nvrtc():
            return ("backend 'cuda' needs a CUDA C compiler for TVM's kernels: nvcc on PATH or the "
                    "cuda-python NVRTC bindings (pip install cuda-python); neither is here")
        A.cuda_runtime_setup()  # nvcc for TVM's kernels here and in the evaluation children
        return None
    if backend == "opencl":
        return ("backend 'opencl' cannot run on this machine (no OpenCL runtime); it runs through TVM RPC "
                "on a board (leka/README.md)")
    return f"unknown backend {backend!r}; use one of llvm, cuda, opencl"


def require_backend(backend: str) -> None:
    msg = missing_for(backend)
    if msg:
        raise UserError(msg)
