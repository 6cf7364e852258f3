"""Baselines a candidate is timed against: untuned TVM (the default lowering), MetaSchedule-tuned
TVM (JSON database cached per task / target / trials and reused), PyTorch eager, torch.compile (plain;
with CUDA graphs on CUDA), and the production engines of benchmark/engines.py (ONNX Runtime, MNN,
TensorRT). Which kinds a backend takes is its record's (`Backend.baselines`): `refusal` asks it."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmark import engines
from benchmark.roots import cache_root, load_root
from benchmark.task import Task
from leka import ir
from leka import tvm_adapter as A
from leka.backends import get_backend
from leka.core.devices import parse_device

# every kind; a backend takes those of its record's `baselines` (leka/backends/*.py)
BASELINES = ("untuned", "tuned", "torch", "torch_compile", "torch_compile_cg", "ort", "mnn", "tensorrt")
PY_KINDS = ("torch", "torch_compile", "torch_compile_cg", *engines.ENGINES)  # timed as Python calls, not TVM VMs


def refusal(kind: str, backend: str) -> str | None:
    """Why `kind` cannot time an evaluation on `backend` (one line), or None: the backend's table says."""
    if kind not in BASELINES:
        return f"unknown baseline {kind!r}; use one of {', '.join(BASELINES)}"
    takes = get_backend(backend).baselines
    if kind not in takes:
        return f"baseline {kind!r} does not run with backend {backend!r}; it takes {', '.join(takes)}"
    return None


def engine_device(kind: str, backend: str) -> str:
    """The device the kind's engine runs on for this backend (its table's entry: "CPU", "OPENCL", "cuda")."""
    return get_backend(backend).baselines.get(kind, "")


def label(kind: str, backend: str, *, threads: int | None = None, trials: int = 64) -> str:
    """The baseline in words on this backend (engines.label with the backend's engine device for the kind)."""
    return engines.label(kind, device=engine_device(kind, backend), threads=threads, trials=trials)


def remote_device(device: Any = None) -> dict[str, Any] | None:
    """A remote device's config as a dict (from a DeviceConfig or its dict); None for this machine."""
    if device is None:
        return None
    d = device if isinstance(device, dict) else device.model_dump(mode="json")
    return d if parse_device(d.get("url") or "local") else None


def tuning_target(backend: str, device: Any = None):
    """The target a baseline is tuned and built for: a board's `device.target` (its GPU kind, its host
    triple) for a remote device, else this machine's."""
    dev = remote_device(device)
    return A.make_target(backend, target=(dev or {}).get("target") or None)


def ms_dir(task: Task, backend: str, trials: int, cache_dir: str | None = None, device: Any = None) -> Path:
    """The database's folder: per task, target (and board key for a remote device) and trial count."""
    dev = remote_device(device)
    target = tuning_target(backend, dev)
    tkey = hashlib.sha256(json.dumps(A.target_json(target), sort_keys=True).encode()).hexdigest()[:8]
    # GPU databases are of the unscheduled kernels (ms_input) since 2026-11-30; the older ones, tuned on
    # top of DLight's schedules, sit in plain trialsN folders and are not reused
    flow = "-unscheduled" if A.is_gpu(target) else ""
    where = f"{backend}-{tkey}" if dev is None else f"{backend}-rpc-{parse_device(dev['url']).key}-{tkey}"
    return cache_root(cache_dir) / "ms" / f"{task.id}-{task.digest}" / where / f"trials{trials}{flow}"


def ms_input(task: Task, backend: str, root: ir.Root, target):
    """What MetaSchedule tunes and its database is applied to: the legalized, fused module before any
    default schedule. On a GPU, DLight's default schedules come after the database, for the kernels it
    does not cover (the database marks the ones it schedules `tirx.is_scheduled`, which DLight skips);
    tuning after DLight would search on top of kernels already bound to threads."""
    return A.lower(ir.relax_module(ir.root_candidate(task, backend, root), root.params), target, gpu_schedule=False)


def is_tuned(d: Path) -> bool:
    """Tuned and cached: DONE written, and a record for each tuning task. A GPU database tuned before
    tuning started from unscheduled PrimFuncs says DONE over no records (MetaSchedule skipped every
    DLight-scheduled task): it is tuned again."""
    done = d / "DONE"
    if not done.exists():
        return False
    try:
        tasks = int(json.loads(done.read_text()).get("tasks", 0))
    except (ValueError, AttributeError):
        return False
    records = d / "database_tuning_record.json"
    return tasks == 0 or (records.is_file() and records.stat().st_size > 0)


def ensure_tuned(task: Task, backend: str = "llvm", trials: int = 64, cache_dir: str | None = None,
                 seed: int = 0, device: Any = None) -> tuple[Path, bool]:
    """Tune once; afterwards reuse the JSON database. Returns (work_dir, reused). For a remote device
    (`rpc://HOST:PORT/KEY`) the trials run on a board under KEY (MetaSchedule's RPCRunner), their
    libraries linked here with `device.cross_compiler`."""
    dev = remote_device(device)
    d = ms_dir(task, backend, trials, cache_dir, dev)
    if is_tuned(d):
        return d, True
    d.mkdir(parents=True, exist_ok=True)
    root = load_root(task, cache_dir)
    target = tuning_target(backend, dev)
    rpc, cc = None, ""
    if dev is not None:
        r = parse_device(dev["url"])
        rpc, cc = (r.host, r.port, r.key), dev.get("cross_compiler") or ""
    t0 = time.time()
    n = A.tune_relax(ms_input(task, backend, root, target), target, str(d), trials, seed=seed, rpc=rpc,
                     cross_compiler=cc)
    (d / "DONE").write_text(json.dumps({"trials": trials, "tasks": n, "seconds": round(time.time() - t0, 1),
                                        "target": A.target_json(target),
                                        **({"device": dev["url"]} if dev else {})}))
    return d, False


def tuned_module(task: Task, root: ir.Root, backend: str, target, work_dir: str):
    """The database's schedules on the unscheduled lowering (the keys it was tuned under); on GPUs
    DLight schedules the kernels it has no record of."""
    return A.tuned_module(ms_input(task, backend, root, target), target, work_dir)


def tuned_executable(task: Task, root: ir.Root, backend: str, target, work_dir: str, for_rpc: bool = False):
    """`tuned_module` built; `for_rpc`: main returns a tensor, not a 1-tuple (as
    `ir.build_candidate(for_rpc=True)`)."""
    mod = tuned_module(task, root, backend, target, work_dir)
    return A.build(A.unwrap_single_output(mod) if for_rpc else mod, target)


def cached_executable(backend: str, target, mod, cache_dir: str | None = None, enabled: bool = True):
    """The baseline's executable from the kernel cache (leka/tvm_adapter/kernel_cache.py): a Level-3
    baseline's build used to run beside every candidate's build; now its kernels are compiled once
    per machine (mostly by the root's evaluation, whose kernels they are) and loaded afterwards.
    Candidate and baseline then both run kernels from shared libraries, so the A/A check compares
    like with like. Backends whose record has `kernel_cache` only (llvm); `evaluator.baseline_cache=false`
    (or a module the cache cannot take) builds it with tvm.compile in-process."""
    if not get_backend(backend).kernel_cache or not enabled:
        return A.build(mod, target)
    try:
        return A.build_with_kernel_cache(mod, target, str(cache_root(cache_dir) / "kernels"))[0]
    except Exception:  # noqa: BLE001 - what the cache cannot take, tvm.compile builds
        return A.build(mod, target)


def prebuild(kind: str, *, task: Task, root: ir.Root, backend: str, target, ms_dir: str | None = None,
             cache_dir: str | None = None, so_cache: bool = True, memory_cfg: str | None = None,
             executable_only: bool = False) -> Any:
    """The baseline's VM for the TVM kinds (build + link: the slow part of a Level-3 evaluation, which
    the evaluation child runs on a second thread while the candidate builds, and which `so_cache`
    does once per machine: `cached_executable`); None for the others. `executable_only`: the built
    executable, no VM (a sandboxed device worker loads it: the judge never touches the device). An
    engine kind's model file, converted and verified in child processes (benchmark/engines.py; raises
    engines.BaselineUnsupported where the engine cannot take the task)."""
    if kind in engines.ENGINES:
        return engines.prepare(kind, task, device=engine_device(kind, backend), cache_dir=cache_dir)
    if kind == "torch_compile" and not get_backend(backend).gpu:
        return engines.warm_compile(task, cache_dir)
    if kind == "untuned":
        mod = ir.lower_layers(ir.root_candidate(task, backend, root), target, root.params).scheduled
    elif kind == "tuned":
        if not ms_dir or not is_tuned(Path(ms_dir)):
            raise RuntimeError("no MetaSchedule database for this task: run `leka bench baseline` first")
        mod = tuned_module(task, root, backend, target, ms_dir)
    else:
        return None
    ex = cached_executable(backend, target, mod, cache_dir, so_cache)
    if executable_only:
        return ex
    return A.VMRunner(ex, A.device_for(backend), memory_cfg=memory_cfg)


def is_root_program(kind: str) -> bool:
    """Whether this baseline is the task's root candidate itself (untuned TVM is the default lowering of
    the root): the root timed against it is an A-vs-A, its own noise floor (benchmark/judge/evaluator.py)."""
    return kind == "untuned"


def python_call(kind: str, model: Any, prepared: Any, backend: str, threads: int | None = None) -> Callable:
    """A PyTorch or engine baseline on the CPU as call(list of inputs) -> outputs: torch eager, torch.compile
    (compiled and run once here: its compile is not timed), or the engine's session on `prepared` (the
    file `prebuild` made). Torch kinds take torch tensors, engines numpy arrays."""
    n = int(threads or len(os.sched_getaffinity(0)))
    if kind in engines.ENGINES:
        return engines.call(kind, prepared, threads=n, device=engine_device(kind, backend))
    import torch

    if kind == "torch_compile_cg":
        raise engines.BaselineUnsupported("torch.compile with CUDA graphs runs on CUDA only")
    if kind == "torch_compile" and prepared:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(prepared)  # the caches warm_compile filled
    fn = torch.compile(model) if kind == "torch_compile" else model

    def call(args):
        with torch.no_grad():
            return fn(*args)
    return call
