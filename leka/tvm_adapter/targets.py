"""Targets and devices: the TVM objects of a backend of the table (`leka.backends`), codegen options."""

from __future__ import annotations

import os
from typing import Any

import tvm

from leka.backends import get_backend
from leka.core.devices import current_board


def tvm_version() -> str:
    return str(tvm.__version__)


def cpu_target(num_cores: int | None = None) -> tvm.target.Target:
    return make_target("llvm", num_cores=num_cores)


def make_target(backend: str, **opts: Any) -> tvm.target.Target:
    """The TVM target of a backend of the table (`leka.backends`); `opts` go to its `target_spec`.
    Inside a run on a board (`leka.core.devices.use_board`) the board's `device.target` is the default
    `target` option: its triple, CPU, features and cores, not this machine's."""
    spec = get_backend(backend)
    opts = {k: v for k, v in opts.items() if v is not None}
    board = current_board()
    if "target" not in opts and board is not None and board.target:
        opts["target"] = board.target
    opts.setdefault("num_cores", len(os.sched_getaffinity(0)))
    return tvm.target.Target(spec.target_spec(system_cpu=tvm.target.codegen.llvm_get_system_cpu(), **opts))


def is_gpu(target: tvm.target.Target) -> bool:
    """DLight default schedules apply and L1 traces must bind threads."""
    try:
        return get_backend(target.kind.name).gpu
    except ValueError:
        return False


def target_json(target: tvm.target.Target) -> dict[str, Any]:
    return {k: (str(v) if not isinstance(v, (int, float, bool)) else v) for k, v in target.export().items()
            if k in ("kind", "mcpu", "num-cores", "arch", "keys")}


def max_threads_per_block(target: tvm.target.Target) -> int | None:
    """A GPU target's threads per block (work-items per work-group); None for a CPU target."""
    n = target.attrs.get("max_threads_per_block", None) or target.attrs.get("max_num_threads", None)
    return int(n) if n is not None and target.kind.name != "llvm" else None


def cpu_arch(target: tvm.target.Target) -> str:
    """The instruction set of a CPU target's code (of a GPU target's host code): "aarch64", "x86_64",
    ... from its `mtriple`; this machine's when it has none."""
    import platform

    t = target if target.kind.name == "llvm" or target.host is None else target.host
    triple = str(t.attrs.get("mtriple", "")) if t.kind.name == "llvm" else ""
    arch = triple.split("-")[0] if triple else platform.machine()
    return {"arm64": "aarch64", "amd64": "x86_64"}.get(arch, arch)


def runs_here(target: tvm.target.Target) -> bool:
    """Code for `target`'s CPU runs on this machine (no board of another instruction set)."""
    import platform

    here = {"arm64": "aarch64", "amd64": "x86_64"}.get(platform.machine(), platform.machine())
    return cpu_arch(target) == here


def vector_lanes_fp32(target: tvm.target.Target) -> int:
    """fp32 lanes of the widest vector register the target has (for vectorise factors)."""
    if target.kind.name != "llvm":
        return 4
    if cpu_arch(target) in ("aarch64", "arm"):
        # NEON is 128-bit. SVE ("+sve" in mattr) is 128 bits at least on every implementation, and
        # TVM's fixed-width vectorisation emits NEON-width code for it: 4 lanes either way
        return 4
    mcpu = str(target.attrs.get("mcpu", ""))
    avx512 = ("avx512", "skylake-avx512", "cascadelake", "icelake", "sapphirerapids",
              "emeraldrapids", "graniterapids", "znver4", "znver5", "x86-64-v4", "cooperlake", "tigerlake")
    if any(k in mcpu for k in avx512):
        return 16
    if mcpu.startswith(("znver", "haswell", "broadwell", "skylake", "alderlake", "x86-64-v3")):
        return 8
    return 4


def device_for(backend: str, index: int = 0):
    if backend == "opencl":
        _opencl_device_api()
    return getattr(tvm, get_backend(backend).device)(index)


def _opencl_device_api() -> None:
    """The wheel has no OpenCL device API: load TVM's OpenCL runtime plugin (opencl_plugin) once."""
    from leka.tvm_adapter import opencl_plugin

    opencl_plugin.load_plugin()
    if not tvm.opencl(0).exist:
        raise opencl_plugin.OpenCLUnavailable(
            "the OpenCL plugin is loaded but no OpenCL device exists: install an ICD (`pocl-opencl-icd` "
            "gives a CPU device) or check OCL_ICD_VENDORS")


LLVM_OPTIONS = get_backend("llvm").compile_options  # the llvm backend's record owns the list


def with_target_options(target: tvm.target.Target, opts: dict[str, Any]) -> tvm.target.Target:
    """The same target with extra codegen attributes (LLVM fast-math flags, opt-level)."""
    base = {k: v for k, v in target.export().items() if k not in ("keys", "tag", "features")}
    return tvm.target.Target({**base, **opts})
