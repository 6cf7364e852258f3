"""Runtime and timing: a built executable on a device, timed without Python overhead; per-kernel profiles."""

from __future__ import annotations

import os
import re
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
import tvm
from tvm import relax

from leka.tvm_adapter import call_loop


def flatten_outputs(out) -> list:
    if isinstance(out, tvm.runtime.Tensor):
        return [out]
    res = []
    for o in out:
        res.extend(flatten_outputs(o))
    return res


# a profile's calls fit in this (profile_kernels): a slow program is profiled in one call
PROFILE_BUDGET_S = 0.5


class VMRunner:
    """A built Relax executable on one device: run on numpy inputs, time without Python overhead."""

    def __init__(self, ex, device, memory_cfg: str | None = None):
        """`memory_cfg`: the VM's allocator, "pooled" (TVM's default: freed buffers stay in a pool for
        reuse) or "naive" (each buffer allocated and freed: memory goes back as soon as nothing holds it)."""
        self.ex = ex
        self.dev = device
        self.vm = relax.VirtualMachine(ex, device, memory_cfg=memory_cfg)

    def to_device(self, arrays: Sequence[np.ndarray]) -> list:
        return [tvm.runtime.tensor(np.asarray(a, order="C"), self.dev) for a in arrays]  # 0-d stays 0-d

    def run_device(self, dev_args: Sequence[Any]) -> list:
        return flatten_outputs(self.vm["main"](*dev_args))

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        return [o.numpy() for o in self.run_device(self.to_device(arrays))]

    def time_per_call(self, dev_args: Sequence[Any], number: int) -> float:
        """Seconds per call, averaged over `number` back-to-back calls (one sample)."""
        te = self.vm.time_evaluator("main", self.dev, number=number, repeat=1, min_repeat_ms=0)
        return float(te(*dev_args).mean)

    def rotating_loop(self, dev_sets: Sequence[Sequence[Any]], cache_dir: str | None = None,
                      hold: int | None = None):
        """`run(number, k)`: `number` back-to-back calls of main in C++ (no Python between them), call i
        on `dev_sets[(k + i) % K]`; returns the last output; `hold` as `call_loop.rotating_loop`.
        CallLoopUnavailable without a compiler."""
        return call_loop.rotating_loop(self.vm["main"], dev_sets, cache_dir, hold=hold)

    def profile_kernels(self, dev_args: Sequence[Any], repeat: int = 5, warmup: int = 1,
                        budget_s: float = PROFILE_BUDGET_S) -> tuple[list[dict], float]:
        """Per VM call (kernels and builtins): seconds per iteration and call count, plus the total.
        `VirtualMachine(profile=True)` is gone in 0.27, so time each call with set_instrument.

        What it costs is bounded by `budget_s`, not by `repeat` alone (issue 44: a ResNet block of ~10 s
        a call spent a minute of an 8-minute run in 6 profiled calls): the first call is instrumented;
        one that lasts `budget_s` or more is the profile by itself (a program that slow has no warm-up
        worth a call: a profile is advice, and its share per kernel is what the router reads); a faster
        one is the warm-up (with `warmup`), followed by at most `repeat` calls that fit `budget_s`."""
        f = self.vm["main"]
        stats: dict[str, list[float]] = defaultdict(list)
        start: dict[str, float] = {}
        # GPU launches return at once: sync around each call so the wall time is the kernel's
        sync = self.dev.sync if self.dev.dlpack_device_type() != tvm.cpu().dlpack_device_type() else (lambda: None)

        def instrument(func, sym, before_run, ret_value, *args):
            sync()
            if before_run:
                start[sym] = time.perf_counter()
            else:
                stats[sym].append(time.perf_counter() - start.pop(sym, time.perf_counter()))
            return 0  # VMInstrumentReturnKind.NO_OP

        self.vm.set_instrument(instrument)
        try:
            t0 = time.perf_counter()
            f(*dev_args)
            sync()
            first = time.perf_counter() - t0
            if first >= budget_s or repeat <= 1 and warmup <= 0:
                repeat = 1
            else:
                if warmup > 0:  # the first call was the warm-up: its times go
                    stats.clear()
                    repeat = max(1, min(repeat, int(budget_s // max(first, 1e-9))))
                else:  # the first call counts: repeat - 1 more within the budget
                    repeat = max(1, min(repeat, 1 + int((budget_s - first) // max(first, 1e-9))))
                t0 = time.perf_counter() - (0.0 if warmup > 0 else first)
                for _ in range(repeat - (0 if warmup > 0 else 1)):
                    f(*dev_args)
                sync()
        finally:
            self.vm.set_instrument(lambda *a: 0)
        total = (time.perf_counter() - t0) / repeat
        rows = [{"name": k, "seconds": sum(v) / repeat, "calls": len(v) // repeat} for k, v in stats.items()]
        rows.sort(key=lambda r: -r["seconds"])
        return rows, total


def planned_memory_bytes(mod: tvm.IRModule, target: tvm.target.Target) -> int | None:
    """Bytes the static memory planner allocates for intermediates (estimate_memory_usage must see
    the module after CallTIRRewrite + StaticPlanBlockMemory; on a fully lowered one it says 0)."""
    try:
        with target:
            planned = tvm.transform.Sequential([
                relax.transform.RewriteDataflowReshape(), relax.transform.ToNonDataflow(),
                relax.transform.RemovePurityChecking(), relax.transform.CallTIRRewrite(),
                relax.transform.StaticPlanBlockMemory()])(mod)
        text = str(relax.analysis.estimate_memory_usage(planned))
    except Exception:  # noqa: BLE001 - an estimate, never worth failing an evaluation over
        return None
    # "With memory planning, there are N constant-size memory allocation(s) with total size X GB."
    m = re.findall(r"With memory planning, .*? total size ([\d.eE+-]+) GB", text)
    return int(round(sum(float(x) for x in m) * 2**30)) if m else 0


def tensor_on(arr: np.ndarray, dev):
    return tvm.runtime.tensor(np.ascontiguousarray(arr), dev)


def run_prim_func(rt_mod, arrays: Sequence[np.ndarray], name: str = "main", number: int = 0,
                  repeat: int = 3) -> tuple[list[np.ndarray], float | None]:
    """Call a compiled single-PrimFunc module (`build_prim_func`) on CPU with every buffer given
    (inputs and preallocated outputs, in parameter order). Returns all buffers afterwards and, when
    `number` > 0, the median seconds per call over `repeat` samples (agents' experiments, tests)."""
    dev = tvm.cpu()
    # np.ascontiguousarray turns a 0-d array into a 1-d one; a copy keeps the rank
    args = [tvm.runtime.tensor(np.array(a, copy=True, order="C"), dev) for a in arrays]
    f = rt_mod[name]
    f(*args)
    secs = None
    if number > 0:
        m = rt_mod.mod if hasattr(rt_mod, "mod") else rt_mod  # tvm.compile returns an Executable
        te = m.time_evaluator(name, dev, number=number, repeat=repeat)
        secs = float(te(*args).median)
    return [a.numpy() for a in args], secs


def cuda_runtime_setup() -> None:
    """Before building CUDA modules: TVM's CUDA codegen compiles the CUDA C it generates through the
    global `tvm_callback_cuda_compile` (registered by tvm.support.nvcc); prefer nvcc when it is on
    PATH, else NVRTC (needs the cuda-python bindings).

    Without fast math: TVM 0.27's nvcc path (`tvm/support/nvcc.py`, `_compile_cuda_nvcc`) passes
    `--use_fast_math` unless the environment has a non-empty `TVM_CUDA_NVCC_NO_FAST_MATH` (any value
    counts, "0" too). Fast math turns `powf(x, 2.0f)` into `exp2f(2 * log2f(x))`, NaN for x < 0, so the
    DLight roots of RMSNorm-like tasks (`x.pow(2).mean(...)`: l1_rmsnorm, the Llama / Mistral decoders)
    were NaN on the H200; references are PyTorch's IEEE results, and a candidate may still ask for
    fast math in its own L2 source (`__expf`, ...). A user's own setting is kept. The NVRTC path
    (TVM_CUDA_COMPILE_MODE=nvrtc, or no nvcc on PATH) always adds `--use_fast_math` in this TVM and
    reads no such variable: there the roots keep the fast-math results."""
    import shutil

    if shutil.which("nvcc"):
        os.environ.setdefault("TVM_CUDA_COMPILE_MODE", "nvcc")
    os.environ.setdefault("TVM_CUDA_NVCC_NO_FAST_MATH", "1")
    from tvm.support import nvcc  # noqa: F401 - registers the compile callback


# ----------------------------------------------------------------------------- CUDA devices
def cuda_device_info(index: int = 0) -> dict[str, Any] | None:
    """Name, compute capability and memory of CUDA device `index`, or None where TVM sees none
    (no driver, no GPU). Initialises CUDA in the calling process: never call it in a process that
    forks evaluation children afterwards (the evaluator's forkserver does not)."""
    dev = tvm.cuda(index)
    if not dev.exist:
        return None
    return {"name": str(dev.device_name), "compute_version": str(dev.compute_version),
            "total_bytes": int(dev.total_global_memory)}


def device_free_bytes(dev) -> int | None:
    try:
        return int(dev.available_global_memory)
    except Exception:  # noqa: BLE001 - a driver without the query: no number, not an error
        return None


class L2Flusher:
    """Overwrites a device buffer larger than the L2 cache (KernelBench's flush), so a timed call
    never reads data a previous call left in L2. A device-to-device copy on the default stream:
    it is ordered before whatever is launched next, so the copy itself is never timed."""

    def __init__(self, dev, nbytes: int = 128 * 2**20):
        self.nbytes = nbytes
        n = nbytes // 4
        self.src = tvm.runtime.tensor(np.zeros(n, dtype="float32"), dev)
        self.dst = tvm.runtime.empty((n,), "float32", dev)

    def flush(self) -> None:
        self.src.copyto(self.dst)


def time_flushed(runner: VMRunner, dev_args: Sequence[Any], number: int, flusher: L2Flusher) -> float:
    """Seconds per call of `runner`'s main, each call timed alone by TVM's device timer (CUDA events,
    synchronised) right after an L2 flush; the mean over `number` calls. The flush is the time
    evaluator's own (`cache_flush_bytes`: a device copy before every repeat, outside the timed
    region): a flush before calling the evaluator would be undone by the untimed warm-up call
    the evaluator makes first."""
    te = runner.vm.module.time_evaluator("main", runner.dev, number=1, repeat=max(1, number), min_repeat_ms=0,
                                         cache_flush_bytes=flusher.nbytes)
    return float(te(*dev_args).mean)


def _pool_view(buf, start: int, byte_offset: int, shape: Sequence[int], dtype: str):
    """A TVM tensor viewing `buf` (the read-only input pool of a sandboxed worker) at one window,
    without a copy: numpy -> torch -> DLPack (numpy will not export a read-only array itself)."""
    import warnings

    import torch

    n = int(np.prod(shape, dtype=np.int64))
    arr = np.frombuffer(buf, dtype=dtype, count=n, offset=start + byte_offset).reshape(tuple(shape))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "not writable": a write faults, as intended
        t = torch.from_numpy(arr)
    return tvm.runtime.from_dlpack(t)


def sandbox_runner(runner: VMRunner, buf, starts: Sequence[int], specs: Sequence[tuple[Sequence[int], str]],
                   cache_dir: str | None = None, hold: int = 0):
    """What a sandboxed worker serves for a VM (benchmark/judge/sandbox/control.py): `run(number, offsets_addr,
    results_addr, cap)` (the C++ window loop over views of the pool) and `profile(offsets, repeat)`
    (per-kernel times on one window); the last `hold` calls' outputs are kept (0: every call's). Made
    before the worker's filter closes: the loop's library is
    loaded and TVM's thread pool started here."""
    protos = [_pool_view(buf, s, 0, shape, dtype) for s, (shape, dtype) in zip(starts, specs, strict=True)]
    run = call_loop.window_loop(runner.vm["main"], protos, cache_dir, hold=hold)
    # a VM of its own: the profile's instrument (a Python callback per call) must not stay on the timed VM
    prof = VMRunner(runner.ex, runner.dev)

    def profile(offsets: Sequence[int], repeat: int) -> tuple[list[dict], float]:
        args = [_pool_view(buf, s, int(o), shape, dtype)
                for s, o, (shape, dtype) in zip(starts, offsets, specs, strict=True)]
        return prof.profile_kernels(args, repeat=repeat)

    return run, profile


def device_sandbox_runner(ex, backend: str, buf, starts: Sequence[int], specs: Sequence[tuple[Sequence[int], str]],
                          n_slots: int, cache_dir: str | None = None) -> dict[str, Any]:
    """What a sandboxed worker serves on a device backend (benchmark/judge/sandbox/wire.py `DeviceServe`).
    Made in the worker before its filter closes: the device is initialised here (the judge that forked
    the worker never touches it), the module loaded onto it, `n_slots` argument sets allocated, and every
    kernel run once on zeros (OpenCL builds its programs at their first launch: PoCL with files and a
    linker)."""
    from leka.backends import get_backend
    from leka.tvm_adapter.targets import device_for

    if get_backend(backend).cuda:
        cuda_runtime_setup()
    dev = device_for(backend)
    runner = VMRunner(ex, dev)
    shapes = [(tuple(int(x) for x in shape), str(dtype)) for shape, dtype in specs]
    slots = [[tvm.runtime.empty(shape, dtype, dev) for shape, dtype in shapes] for _ in range(max(1, n_slots))]
    for t, (shape, dtype) in zip(slots[0], shapes, strict=True):  # the warm-up's inputs; the others are
        t.copyfrom(np.zeros(shape, dtype=dtype))  # uploaded before any call reads them
    # the warm-up, every path once (programs built, the allocator's first buffers, the driver's
    # staging for copies both ways), so nothing after the filter needs a file, a thread or new code
    for o in flatten_outputs(runner.vm["main"](*slots[0])):
        o.numpy()
    loop = call_loop.slot_loop(runner.vm["main"], slots, cache_dir)
    first = np.zeros(1, dtype=np.int64)  # call 0 on slot 0 (alive across the call: the loop reads it)
    loop(1, int(first.ctypes.data))
    prof = VMRunner(ex, dev)  # its own VM: the profile's instrument must not stay on the timed one
    flatten_outputs(prof.vm["main"](*slots[0]))
    dev.sync()
    held: list[Any] = [None]
    k = len(shapes)
    counts = [int(np.prod(shape, dtype=np.int64)) for shape, _ in shapes]

    def upload(offsets: np.ndarray, n: int) -> None:
        for s in range(int(n)):
            for i, (shape, dtype) in enumerate(shapes):
                at = int(starts[i]) + int(offsets[s * k + i])
                slots[s][i].copyfrom(np.frombuffer(buf, dtype=dtype, count=counts[i], offset=at).reshape(shape))
        dev.sync()

    def run(n: int, slots_addr: int) -> int:
        held[0] = None  # the last request's outputs go back to the allocator
        held[0] = loop(int(n), int(slots_addr))
        dev.sync()
        return len(held[0])

    def fetch(j: int) -> list[np.ndarray]:
        return [o.numpy() for o in flatten_outputs(held[0][int(j)])]

    def inputs(s: int) -> list[np.ndarray]:
        return [t.numpy() for t in slots[int(s)]]

    def profile(slot: int, repeat: int) -> tuple[list[dict], float]:
        return prof.profile_kernels(slots[int(slot)], repeat=repeat)

    return {"upload": upload, "run": run, "fetch": fetch, "inputs": inputs, "profile": profile,
            "slots": len(slots)}


def start_thread_pool(threads: int) -> None:
    """TVM's worker threads, `threads` of them, made now (a sandboxed worker may not create threads
    later). TVM sizes its pool from TVM_NUM_THREADS, else half the hardware threads on x86 (it takes
    every other one for a hyperthread): 1 on a 2-core machine without SMT; config_threadpool alone
    cannot go over that."""
    os.environ["TVM_NUM_THREADS"] = str(int(threads))
    f = tvm.get_global_func("runtime.config_threadpool", True)
    if f is not None:
        f(0, int(threads))
