"""NVIDIA GPUs: CUDA C generated here on any machine, candidates run on a GPU host. L2 sources are
whole CUDA C kernels spliced into the generated source. Roofs: measured with torch on the GPU
(`leka bench roof --backend cuda`), else the datasheet table below."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

from leka.backends import Backend, GuardProfile, L2Language
from leka.backends._contract import GPU_L1, gpu_l2, gpu_prompt_l2


def target_spec(arch: str = "sm_90", target: dict[str, Any] | None = None, **_: Any) -> dict[str, Any]:
    # MetaSchedule's GPU rules read the thread and shared-memory limits from the target; a board's
    # device.target (e.g. a Jetson Orin: {"arch": "sm_87", "host": {"kind": "llvm", "mtriple":
    # "aarch64-linux-gnu"}}) overrides the arch and gives the host code's CPU
    return {"kind": "cuda", "arch": arch, "max_threads_per_block": 1024, "max_shared_memory_per_block": 49152,
            "thread_warp_size": 32, **(target or {})}


def unavailable() -> str | None:
    """Without touching CUDA (the evaluator forks children that must initialise it themselves): a
    device node or nvidia-smi for the GPU, nvcc or NVRTC's bindings for TVM's generated CUDA C."""
    if not any(Path("/dev").glob("nvidia[0-9]*")) and not shutil.which("nvidia-smi"):
        return "it has no NVIDIA GPU (no /dev/nvidia* device, no nvidia-smi); run it on a GPU host"
    if not shutil.which("nvcc") and importlib.util.find_spec("cuda") is None:
        return ("it has no CUDA C compiler for TVM's kernels: nvcc on PATH or the cuda-python NVRTC bindings "
                "(pip install cuda-python)")
    return None


# fp32 non-tensor-core FMA peak (GFLOP/s) and HBM bandwidth (GB/s) by compute capability
PEAKS = {
    "sm_90": ("nvidia-h200", 67_000.0, 4_800.0),
    "sm_80": ("nvidia-a100", 19_500.0, 2_039.0),
    "sm_87": ("nvidia-jetson-orin", 5_300.0, 204.8),
    "sm_89": ("nvidia-l4", 30_300.0, 300.0),
}

CUDA_C = L2Language(
    "cuda", "cu", kernel_qualifier=r'(?:extern\s+"C"\s+)?__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?',
    kernel_words='extern "C" __global__',
    guard=GuardProfile(constant=r"\b__constant__\b", device_state=r"\b__(?:device|managed)__\b",
                       device_qualifiers=r"\b__(?:device|managed|shared)__\b", device_heap=True),
    file_suffixes=(".cu",), default_entry="{name}_kernel",
)

BACKEND = Backend(
    name="cuda", target_spec=target_spec, device="cuda", remote_device="cuda", runs_on=("gpu", "rpc"),
    unavailable=unavailable, l2=(CUDA_C,), domain="robotics", gpu=True, cuda=True,
    source_hook="tvm_callback_cuda_postproc", resources={"CPU": 1.0, "GPU": 1.0},
    rule_agents={"L2": "agents.l2_cuda:RuleCudaL2Agent"}, peaks=PEAKS, default_arch="sm_90",
    roof_device="cuda", rank=1,
    runtime_env=("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH"),
    contract_l1=GPU_L1, prompt_l2=gpu_prompt_l2("cuda"),
    contract_l2=gpu_l2(".cu", "CUDA C", 'extern "C" __global__ void', "It is compiled with the generated module "
                       "(nvcc or NVRTC, for this GPU's arch); warp intrinsics (`__shfl_down_sync`), "
                       "`__shared__` arrays and `__launch_bounds__` are available."),
    # torch.compile with CUDA graphs (mode="reduce-overhead") is what a user would deploy at batch 1: the
    # plain kind times host launch overhead on 10-50 us tasks; TensorRT through ONNX where it is installed
    baselines={"untuned": "", "tuned": "", "torch": "cuda", "torch_compile": "cuda", "torch_compile_cg": "cuda",
               "tensorrt": "cuda"},
)
