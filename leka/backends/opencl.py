"""OpenCL devices: OpenCL C generated here; candidates run in this process on any OpenCL platform (PoCL
gives one on the CPU) once TVM's OpenCL runtime plugin is built (`make opencl`; the pip wheel has no
OpenCL runtime), or through TVM RPC on a board (RK3588 Mali, Adreno: docs/boards.md). L2 sources are
whole OpenCL C kernels spliced into the generated source."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from leka.backends import Backend, GuardProfile, L2Language
from leka.backends._contract import GPU_L1, gpu_l2, gpu_prompt_l2
from leka.backends.paths import cache_home

PLUGIN_NAME = "libtvm_opencl.so"


def plugin_path() -> Path:
    """Where `make opencl` puts the plugin ($LEKA_OPENCL_PLUGIN overrides; else the cache home,
    leka/backends/paths.py)."""
    env = os.environ.get("LEKA_OPENCL_PLUGIN")
    return Path(env) if env else cache_home() / PLUGIN_NAME


def target_spec(system_cpu: str = "", target: dict[str, Any] | None = None, **_: Any) -> dict[str, Any]:
    # host code runs on this CPU unless a device config names the board's host (mtriple, ...)
    spec = {"kind": "opencl", **(target or {})}
    spec.setdefault("host", {"kind": "llvm", "mcpu": system_cpu})
    return spec


def unavailable() -> str | None:
    """Local OpenCL needs the plugin and an ICD; a board behind RPC brings its own runtime (the callers
    skip this check for `--device rpc://...`)."""
    p = plugin_path()
    if not p.is_file():
        return f"no OpenCL runtime plugin at {p}: run `make opencl` (or `leka opencl build --tvm-src DIR`)"
    vendors = Path(os.environ.get("OCL_ICD_VENDORS", "/etc/OpenCL/vendors"))
    if not vendors.exists() or (vendors.is_dir() and not any(vendors.glob("*.icd"))):
        return (f"no OpenCL platform ({vendors} lists no .icd): install pocl-opencl-icd (`make opencl`) or a "
                "GPU driver's OpenCL")
    return None


OPENCL_C = L2Language(
    # an attribute may nest one level of parentheses: __attribute__((reqd_work_group_size(64, 1, 1)))
    "opencl", "cl", kernel_qualifier=r"__kernel\s+void\s+(?:__attribute__\(\((?:[^()]|\([^()]*\))*\)\)\s+)?",
    kernel_words="__kernel", guard=GuardProfile(constant=r"\b__?constant\b"),
    file_suffixes=(".cl",), default_entry="{name}_kernel",
)

BACKEND = Backend(
    name="opencl", target_spec=target_spec, device="opencl", remote_device="cl", runs_on=("local", "rpc"),
    unavailable=unavailable, l2=(OPENCL_C,), domain="aiot", gpu=True, source_hook="tvm_callback_opencl_postproc",
    # a job holds the board (device:<opencl_device_key>) and little CPU: the board does the work
    resources={"CPU": 0.5}, holds_device=True,
    rule_agents={"L1": "agents.l1_opencl:OpenCLRuleL1Agent", "L2": "agents.l2_opencl:OpenCLRuleL2Agent"},
    # RK3588-class board: a guess until measured over RPC
    peaks={"opencl": ("mobile-gpu-mali-g610", 500.0, 50.0)}, default_arch="opencl", rank=2,
    runtime_env=("LEKA_OPENCL_PLUGIN", "OCL_ICD_VENDORS", "OCL_ICD_FILENAMES", "POCL_DEVICES",
                 "POCL_MAX_PTHREAD_COUNT", "LD_LIBRARY_PATH"),
    contract_l1=GPU_L1, prompt_l2=gpu_prompt_l2("opencl"),
    contract_l2=gpu_l2(".cl", "OpenCL C", "__kernel void", "It is built by the OpenCL platform's compiler "
                       "(PoCL on a CPU, or the board's driver); `native_*` math builtins and "
                       "`__attribute__((reqd_work_group_size(x, y, z)))` are available."),
    # PyTorch and ONNX Runtime run on the host CPU (as before); MNN on its OpenCL backend, where the
    # installed MNN has one (the PyPI wheel has not: a baseline_unsupported row says so)
    baselines={"untuned": "", "tuned": "", "torch": "cpu", "ort": "CPU", "mnn": "OPENCL"},
)
