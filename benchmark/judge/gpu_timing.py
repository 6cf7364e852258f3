"""GPU side of the evaluation child (backend cuda): device timers, L2 flushes, one GPU at a time,
device memory, CUDA faults as data.

- Timing uses the device's own timer (TVM's time_evaluator on tvm.cuda: CUDA events, synchronised;
  torch baselines: torch.cuda.Event), one call per timed interval, an L2 flush before each call
  (a 128 MiB device copy, over twice the H200's 60 MB L2), as KernelBench does.
- `gpu_lock()`: several evaluation children may build at once (CPU work), but only one at a time
  runs on the GPU (checks and timing), so concurrent runs do not time each other's kernels. A file
  lock (flock) that the kernel releases if the child dies; LEKA_GPU_LOCK names the file.
- CUDA is first touched inside the child, never in the forkserver that forks it, and a child that
  met a CUDA fault (sticky: it poisons its context) ends with its result; the next evaluation is a
  fresh child with a fresh context.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

_FAULT = re.compile(r"illegal (memory )?address|unspecified launch failure|launch failed|misaligned address|"
                    r"illegal instruction|CUDA_ERROR_(ILLEGAL|LAUNCH|MISALIGNED|HARDWARE)|cudaError(IllegalAddress|"
                    r"LaunchFailure|MisalignedAddress)|device-side assert|an illegal memory access", re.I)


def is_cuda_fault(message: str) -> bool:
    """A sticky CUDA error (the context is unusable afterwards), as opposed to an ordinary runtime error."""
    return bool(_FAULT.search(message or ""))


def cuda_initialized() -> bool:
    """Whether this process has initialised the CUDA driver (cuInit), without initialising it: a
    process that has cannot fork a worker that uses CUDA. libcuda not loaded: not initialised."""
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD)
    except OSError:
        return False
    ctx = ctypes.c_void_p()
    return int(lib.cuCtxGetCurrent(ctypes.byref(ctx))) != 3  # CUDA_ERROR_NOT_INITIALIZED


def lock_path() -> Path:
    return Path(os.environ.get("LEKA_GPU_LOCK") or Path(tempfile.gettempdir()) / f"leka-gpu-{os.getuid()}.lock")


@contextlib.contextmanager
def gpu_lock(enabled: bool = True) -> Iterator[None]:
    if not enabled:
        yield
        return
    p = lock_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


_HELD: list = []  # the lock files this process holds until it exits (hold_gpu_lock)


def hold_gpu_lock() -> None:
    """Take the GPU lock for the rest of this process: the evaluation child checks and times until
    it exits, and the kernel releases an flock when the process dies, however it dies. (A
    `gpu_lock()` entered without a `with` is released at once: the dropped generator closes.)"""
    if _HELD:
        return
    p = lock_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    f = open(p, "a+")  # noqa: SIM115 - kept open on purpose: the lock lives as long as the file
    fcntl.flock(f, fcntl.LOCK_EX)
    _HELD.append(f)


class DeviceMemory:
    """GPU memory taken between `start()` and the highest `sample()`: the device's used bytes
    (total - free). Exact while this child holds the GPU lock alone on the device; TVM's pooled
    allocator keeps what it took, so the last sample after a run is close to the peak."""

    def __init__(self, dev):
        from leka import tvm_adapter as A

        self._free = lambda: A.device_free_bytes(dev) or _torch_free()
        self.base = self._free()
        self.peak = 0

    def sample(self) -> None:
        now = self._free()
        if now is not None and self.base is not None:
            self.peak = max(self.peak, self.base - now)

    def bytes(self) -> int | None:
        return self.peak if self.base is not None else None


def _torch_free() -> int | None:
    try:
        import torch

        return int(torch.cuda.mem_get_info()[0])
    except Exception:  # noqa: BLE001 - no number rather than a failed evaluation
        return None


def tvm_gpu_timer(runner, dev_args, flusher):
    from benchmark.judge.timing import Timer
    from leka import tvm_adapter as A

    return Timer(lambda n: A.time_flushed(runner, dev_args, clamp_calls(n), flusher))


def torch_cuda_timer(fn: Callable[[], Any], flusher):
    """Seconds per call of a torch callable on the GPU, CUDA events around each call, L2 flushed
    before each (the flush is a TVM copy on the legacy default stream, which torch's default stream is)."""
    import torch

    from benchmark.judge.timing import Timer

    def sample(n: int) -> float:
        n = clamp_calls(n)
        total = 0.0
        for _ in range(n):
            flusher.flush()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            total += a.elapsed_time(b) / 1e3
        return total / n

    return Timer(sample)


def torch_gpu_call(kind: str, model, inputs, prepared=None) -> Callable[[], None]:
    """A PyTorch or engine baseline on the GPU, ready to time: `torch` (eager), `torch_compile`
    (torch.compile, default mode), `torch_compile_cg` (mode="reduce-overhead": CUDA graphs, what a user
    deploys at batch 1, where the plain kinds time the host's launches), `tensorrt` (`engine_gpu_call`
    on the plan `prepared` by benchmark/engines.py). Compiled and warmed up here: the evaluation child
    does this before it takes the GPU lock, so a compile (tens of seconds) does not hold the GPU."""
    if kind == "tensorrt":
        from benchmark.engines import engine_gpu_call

        return engine_gpu_call(kind, prepared, inputs)
    import torch

    m = model.to("cuda").eval()
    tin = [torch.from_numpy(a.copy()).to("cuda") for a in inputs]
    fn = {"torch": m, "torch_compile": None, "torch_compile_cg": None}[kind]
    if fn is None:
        fn = torch.compile(m, mode="reduce-overhead" if kind == "torch_compile_cg" else None)

    def call():
        with torch.no_grad():
            fn(*tin)

    # torch.compile compiles on the first call and (reduce-overhead) records its graphs on later ones;
    # every kind warms the allocator
    for _ in range(3 if kind == "torch_compile_cg" else 2):
        call()
    torch.cuda.synchronize()
    return call


def clamp_calls(n: int, cap: int = 200) -> int:
    """A flushed call costs a flush and a sync besides itself: cap `number` so a sample of a
    microsecond kernel does not take seconds."""
    return max(1, min(n, cap))


def baseline_timer(kind: str, *, task, root, target, inputs, model, ms_dir, cache_dir, runner, flusher,
                   torch_call=None):
    """The baseline's Timer on the GPU: untuned (DLight default schedules) or tuned (MetaSchedule)
    TVM with the device timer, or PyTorch (eager / torch.compile) with CUDA events."""
    from benchmark import baselines

    if kind in ("untuned", "tuned"):
        runner = runner or baselines.prebuild(kind, task=task, root=root, backend="cuda", target=target,
                                              ms_dir=ms_dir, cache_dir=cache_dir)
        return tvm_gpu_timer(runner, runner.to_device(inputs), flusher)
    if kind in ("torch", "torch_compile", "torch_compile_cg", "tensorrt"):
        return torch_cuda_timer(torch_call or torch_gpu_call(kind, model, inputs), flusher)
    raise ValueError(f"baseline {kind!r} does not run on the GPU; use untuned, tuned, torch, torch_compile, "
                     "torch_compile_cg or tensorrt")


def time_step(st: Any) -> bool:
    """The in-process CUDA time step (evaluator.sandbox=false: the user's choice to run the candidate in
    the judge's process): the device's timer, an L2 flush before every timed call, one fixed input set
    (docs/threat_model.md). Sandboxed, every baseline kind is a worker (benchmark/judge/sandbox/baseline.py)."""
    from benchmark.judge import timing
    from leka import tvm_adapter as A

    job, cfg, res = st.job, st.cfg, st.res
    dev = st.runner.dev
    flusher = A.L2Flusher(dev)
    base = baseline_timer(job["baseline"], task=st.task, root=st.root, target=st.target,
                          inputs=st.inputs_by_seed[0], model=st.model, ms_dir=job.get("ms_dir"),
                          cache_dir=job.get("cache_dir"),
                          runner=st.base_prep.result() if st.base_prep is not None else None,
                          flusher=flusher, torch_call=st.torch_call)
    cand = tvm_gpu_timer(st.runner, st.runner.to_device(st.inputs_by_seed[0]), flusher)
    tm = timing.paired_timing(cand, base, cfg, gpu=True)
    st.dmem.sample()
    res.peak_device_bytes = st.dmem.bytes()
    res.extra["timer"] = "device (CUDA events), L2 flushed before each call"
    timing.record(res, tm)
    return True
