"""The judge's half of a sandboxed evaluation (benchmark/judge/sandbox/control.py has the worker's): the checked
runs and the profile (the paired timing: timing.py), each as requests to workers the judge
forked after the build.

- **Check.** Per seed the pool is filled with that seed's inputs (window 0) and, for the first seed, a
  poison call on other valid inputs (a shifted window) comes first; the seed call's outputs are read
  out of the stopped worker and compared with the PyTorch reference, computed here, by the judge,
  after the candidate's run. The inputs are compared with what was written (the worker maps them
  read-only, so a write would have faulted).
- **Timing**: benchmark/judge/sandbox/timing.py, the same workers and pool.

No tvm import here.
"""

from __future__ import annotations

import math
import random
import re
import sys
import time
from typing import Any

import numpy as np

from benchmark import baselines
from benchmark.judge import audit, gpu_timing, memory, seeds, timing
from benchmark.judge.errors import set_error
from benchmark.judge.outputs import as_numpy, compare
from benchmark.judge.sandbox import baseline as baseline_workers
from benchmark.judge.sandbox import control
from leka import tvm_adapter as A
from leka.backends import get_backend

SYSRAND = random.SystemRandom()
# an allocation refused by the worker's data limit (RLIMIT_DATA: the memory cap), as TVM / C++ say it
OOM = re.compile(r"bad_alloc|out of memory|cannot allocate|allocat\w*[^\n]{0,60}fail|ENOMEM", re.I)


def _references(st: Any, seed: int) -> list[np.ndarray]:
    """The seed's PyTorch outputs, computed here after the candidate's run of that seed (the worker
    cannot open anything of the judge's: they never touch a disk)."""
    import torch

    from benchmark.judge import refs

    if st.ref_model is None:
        st.ref_model = st.task.make_model()
    with torch.no_grad():
        return refs.flat_outputs(st.ref_model(*st.task.make_inputs(seed)))


def unsupported(st: Any) -> str | None:
    """Why this job runs the candidate in the judge's own process (the pre-sandbox path), or None."""
    if not st.cfg.get("sandbox", True):
        return "evaluator.sandbox is false"
    if not sys.platform.startswith("linux"):
        return f"no sandbox on {sys.platform}"
    for _, d in st.root.outputs:
        try:
            np.dtype(d)
        except TypeError:
            return f"output dtype {d} has no numpy type to read it back as"
    return None


def on_device(st: Any) -> bool:
    """The backend's memory is a device's (CUDA, OpenCL): the worker uploads inputs into slots."""
    return bool(get_backend(st.backend).gpu)


def _device_served(st: Any, ex: Any, specs: list[control.InputSpec], slots: int, guard: bool,
                   threads: int | None = None) -> control.Served:
    shapes = [(s.shape, s.dtype) for s in specs]
    cache = str(baselines.cache_root(st.job.get("cache_dir")))
    threads = int(st.job.get("threads", 2)) if threads is None else threads

    def setup(buf, pool):
        d = A.device_sandbox_runner(ex, st.backend, buf, pool.starts, shapes, slots, cache)
        return control.DeviceServe(**d)

    return control.Served(setup=setup, n_outputs=len(st.root.outputs), threads=threads, sandbox=True,
                          guard=guard, warm=lambda: A.start_thread_pool(threads), device=True)


def _specs(st: Any) -> list[control.InputSpec]:
    return [control.InputSpec(tuple(a.shape), str(a.dtype)) for a in (as_numpy(t) for t in st.task.make_inputs(0))]


def input_maker(st: Any):
    return lambda seed: [as_numpy(t) for t in st.task.make_inputs(seed)]


def _hold(st: Any) -> int:
    return max(0, int(st.cfg.get("sandbox_hold", 0)))


def _vm_served(st: Any, runner, specs: list[control.InputSpec], guard: bool, libs: list[str] = (),
               threads: int | None = None) -> control.Served:
    """`runner` None: the candidate's VM is made in the worker, after it loaded the L2 `libs`.
    `threads`: the worker's compute threads (default: the job's)."""
    shapes = [(s.shape, s.dtype) for s in specs]
    cache = str(baselines.cache_root(st.job.get("cache_dir")))
    threads = int(st.job.get("threads", 2)) if threads is None else threads
    hold = _hold(st)
    ex, dev = st.built.executable, A.device_for(st.backend)
    return control.Served(
        setup=lambda buf, pool: A.sandbox_runner(runner if runner is not None else A.VMRunner(ex, dev), buf,
                                                 pool.starts, shapes, cache, hold=hold),
        l2_libs=list(libs),
        n_outputs=len(st.root.outputs), threads=threads, sandbox=True, guard=guard, hold=hold,
        warm=lambda: (A.start_thread_pool(threads), A.call_loop.preload(cache)),
        pin=bool(st.cfg.get("sandbox_pin", True)),
        guard_inputs=lambda lo, hi, fd: A.call_loop.install_input_guard(lo, hi, fd, cache))


def _pool(st: Any, specs: list[control.InputSpec], device: bool) -> control.Pool:
    cfg, out_bytes = st.cfg, max(1, st.root.output_bytes)
    # outputs held for the check bound a request's calls where every call's are kept; with a ring the
    # pool's windows do
    max_calls = int(cfg.get("sandbox_output_mib", 8)) * 2**20 // out_bytes if not _hold(st) else 2**20
    if device:  # slots on the device: a call's inputs and outputs each
        per_call = out_bytes + sum(s.nbytes for s in specs)
        max_calls = min(DEVICE_SLOTS, int(cfg.get("sandbox_device_mib", 512)) * 2**20 // max(1, per_call))
    sets = max(1, int(cfg.get("sandbox_input_sets", 2)))
    # a window per call, disjoint: as many as the calls can use, within the pool's budget (each request
    # refills the windows it reads, and on the CPU they should stay in the last-level cache with the
    # outputs; on a device they are uploaded into slots, bounded by sandbox_device_mib already)
    per_window = sum(control.align(max(s.nbytes, 1)) for s in specs) or 1
    budget = int(cfg.get("sandbox_device_mib", 512) if device else cfg.get("sandbox_pool_mib", 8)) * 2**20
    windows = max(1, min(-(-max(1, max_calls) // sets), budget // (sets * per_window)))
    return control.Pool(specs, windows, max_calls=max(1, max_calls), sets=sets)


def start(st: Any) -> None:
    """Fork the candidate's worker (and the baseline's, when this job times): call after the build."""
    cfg = st.cfg
    specs = _specs(st)
    device = on_device(st)
    st.pool = pool = _pool(st, specs, device)
    cap, _ = memory.cap_bytes(st.job.get("memory_cap_gb", cfg.get("memory_cap_gb")), st.footprint)
    guard = bool(cfg.get("process_check", True))
    A.call_loop.library(str(baselines.cache_root(st.job.get("cache_dir"))))  # compiled here: workers only load it

    def served(runner_or_ex: Any) -> control.Served:
        if device:
            return _device_served(st, runner_or_ex, specs, pool.max_calls, guard)
        return _vm_served(st, runner_or_ex, specs, guard)

    if device and get_backend(st.backend).cuda and gpu_timing.cuda_initialized():
        raise control.WorkerError("CUDA was initialised in the evaluation process before its sandboxed workers "
                                  "were forked, so they cannot use it (a CUDA call in the build or the import?); "
                                  "evaluator.sandbox=false runs the candidate in the evaluation process instead")
    st.workers = {}
    threads = _candidate_threads(st)
    cand_served = (_device_served(st, st.built.executable, specs, pool.max_calls, guard, threads) if device
                   else _vm_served(st, st.runner, specs, guard, libs=st.built.l2_libs, threads=threads))

    def deadline() -> control.Deadline:
        return control.Deadline(floor_s=float(cfg.get("sandbox_request_floor_s", 20.0)),
                                factor=float(cfg.get("sandbox_request_factor", 10.0)),
                                first_s=float(cfg.get("sandbox_first_request_s", 180.0)))

    st.workers["candidate"] = control.start(cand_served, pool, "candidate", data_limit=cap, deadline=deadline())
    if st.job.get("time") and st.job.get("baseline") and not timing.times_alone(cfg):
        kind = st.job["baseline"]
        if kind in ("untuned", "tuned"):
            base = st.base_prep.result() if st.base_prep is not None else baselines.prebuild(
                kind, task=st.task, root=st.root, backend=st.backend, target=st.target, ms_dir=st.job.get("ms_dir"),
                cache_dir=st.job.get("cache_dir"), so_cache=cfg.get("baseline_cache", True), executable_only=device)
            # the baseline's worker runs the same guard after its runs, its verdict unused: the check
            # touches memory, and done after one arm's runs only it cost that arm 5-9% on small kernels
            base_served = served(base)
        else:
            st.model = st.model or st.task.make_model()
            prepared = st.base_prep.result() if st.base_prep is not None else None
            base_served = (baseline_workers.py_device_served(st, kind, specs, prepared, pool.max_calls) if device
                           else baseline_workers.py_served(st, kind, specs, prepared, _hold(st)))
        st.workers["baseline"] = control.start(base_served, pool, "baseline", data_limit=cap, deadline=deadline())
    pool.map_rw()
    import torch

    torch.set_num_threads(int(st.job.get("threads", 2)))  # the judge's references: workers are forked
    st.max_calls = pool.max_calls
    st.res.extra["sandbox"] = ", ".join(st.workers["candidate"].layers) or "process only"
    st.res.extra["sandbox_threads"] = st.workers["candidate"].threads
    if st.workers["candidate"].placed:
        st.res.extra["sandbox_placed"] = {r: w.placed for r, w in st.workers.items()}


def _candidate_threads(st: Any) -> int:
    """The candidate worker's threads: the job's, as the candidate's levels of phase "run" set them
    (leka.ir.run_options; at most the job's). The baseline's worker keeps the job's own."""
    from leka.ir import run_options

    ro = run_options(st.cand, int(st.job.get("threads", 2)))
    if ro.extra:
        st.res.extra["run_options"] = {**ro.extra, "threads": ro.threads}
    return ro.threads


def close(st: Any) -> None:
    for w in (getattr(st, "workers", None) or {}).values():
        w.close()
    if getattr(st, "pool", None) is not None:
        st.pool.close()


def outputs_like(st: Any) -> list[tuple[tuple[int, ...], str]]:
    return [(tuple(s), str(d)) for s, d in st.root.outputs]


STEP_OF = {"timing": "time_step", "profile": "profile_export"}  # else a seed's: the check


def fail(st: Any, e: BaseException, where: str) -> bool:
    if isinstance(e, control.WorkerTimeout):
        set_error(st.res, "timeout", f"{where}: {e}, during the {STEP_OF.get(where, 'check')} step")
    elif isinstance(e, control.WorkerError) and e.kind:
        set_error(st.res, e.kind, f"{where}: {e}")
    elif isinstance(e, control.WorkerError) and OOM.search(str(e)):
        set_error(st.res, "oom", f"{where}: the candidate's worker could not allocate within the memory cap, "
             f"during the {'time_step' if where == 'timing' else 'check'} step ({e})")
    elif isinstance(e, control.WorkerDied):
        set_error(st.res, "crash", f"{where}: {e}")
    elif isinstance(e, control.ShapeMismatch):
        set_error(st.res, "shape", f"{where}: {e}")
    else:
        set_error(st.res, "runtime", f"{where}: {e}")
    return False


DEVICE_SLOTS = 256  # argument sets a device worker holds: the calls one request may make
BIG_OUTPUTS = 256 * 2**20  # outputs past this are read from the worker and compared piece by piece
PIECE = 64 * 2**20


def compare_remote(w: control.SandboxWorker, call: list[control.Out], refs: list[np.ndarray], atol: float,
                   rtol: float) -> tuple[str | None, str, float, float]:
    """`outputs.compare` of one call's outputs, read from the stopped worker: whole where they are
    small, in pieces of PIECE bytes where they are large (no full copy of a GiB output in the judge)."""
    like = [(tuple(r.shape), str(r.dtype)) for r in refs]
    try:
        control.check_like(call, like)
    except control.ShapeMismatch as e:
        return "shape", str(e), math.nan, math.nan
    if sum(o.nbytes for o in call) <= BIG_OUTPUTS:
        return compare(w.read_outputs(call, like), refs, atol, rtol)
    max_abs = max_rel = 0.0
    for i, (o, r) in enumerate(zip(call, refs, strict=True)):
        addr = o.addr
        flat, item = r.reshape(-1), r.dtype.itemsize
        step = max(1, PIECE // item)
        for lo in range(0, flat.size, step):
            hi = min(flat.size, lo + step)
            got = np.frombuffer(control.read_memory(w.pid, addr + lo * item, (hi - lo) * item), dtype=r.dtype)
            kind, msg, ea, er = compare([got], [flat[lo:hi]], atol, rtol)
            if not math.isnan(ea):
                max_abs, max_rel = max(max_abs, ea), max(max_rel, er)
            if kind:
                return kind, f"output {i}, elements [{lo}, {hi}): {msg.partition(': ')[2] or msg}", ea, er
    return None, "", max_abs, max_rel


def check(st: Any) -> bool:
    """Seed by seed through the candidate's worker (see the module docstring)."""

    res, t0 = st.res, time.perf_counter()
    w, pool, make = st.workers["candidate"], st.pool, input_maker(st)
    zero = [0] * len(pool.specs)
    max_abs = max_rel = 0.0
    try:
        for n, seed in enumerate(st.seeds):
            inputs = make(seed)
            pool.fill(make, seed, slack_seed=SYSRAND.randrange(10**6, 2**31 - 10**5), windows=[pool.other()])
            rows = [zero]
            if seeds.poison_run(st.cfg) and n == 0:
                poison = [pool.offset(i, *pool.other()) for i in range(len(pool.specs))]  # other valid inputs first
                if st.root.output_bytes > BIG_OUTPUTS or st.max_calls < 2:
                    w.run([poison])  # its own request: its outputs are freed before the seed's call
                else:
                    rows = [poison, zero]
            calls = w.run(rows)
            changed = w.state() if st.cfg.get("process_check", True) else None
            if changed:
                set_error(res, "process_state", f"after the candidate's run (seed {seed}): {changed}")
                return False
            # on a device, the slot the seed's call ran on is read back: its copy of the inputs is the device's
            after = w.slot_inputs(len(rows) - 1, [(s.shape, s.dtype) for s in pool.specs]) if w.device else \
                [pool.window(i, 0) for i in range(len(inputs))]
            for i, a in enumerate(inputs):
                if not np.array_equal(a, after[i], equal_nan=True):
                    set_error(res, "input_mutated", f"seed {seed}: input {i} changed")
                    return False
            refs = _references(st, seed)
            kind, msg, ea, er = compare_remote(w, calls.outputs[-1], refs, st.atol, st.rtol)
            if not math.isnan(ea):
                max_abs, max_rel = max(max_abs, ea), max(max_rel, er)
            if kind:
                res.max_abs_err, res.max_rel_err = (None if math.isnan(ea) else ea), (None if math.isnan(er) else er)
                set_error(res, kind, f"seed {seed}: {msg}")
                return False
            if n == 0:
                st.inputs_by_seed.append(inputs)
                st.ref_degenerate = audit.degenerate(refs, st.atol, st.rtol)  # the refs go: judged now
            del refs
    except (control.WorkerDied, control.WorkerError, control.ShapeMismatch) as e:
        return fail(st, e, f"seed {seed}")
    finally:
        res.check_s = time.perf_counter() - t0
    res.max_abs_err, res.max_rel_err = max_abs, max_rel
    res.correct = True
    res.peak_memory_bytes = int((res.planned_memory_bytes or 0) + sum(a.nbytes for a in st.root.params.values())
                                + sum(s.nbytes for s in pool.specs) + st.root.output_bytes)
    return True


def profile(st: Any) -> dict:
    """Per-kernel times measured in the candidate's worker on seed-0 inputs (advice, as before); the
    report itself (FLOPs, bytes, roofline) is made here from the built module."""
    from profilers.profile import profile_built

    make = input_maker(st)
    st.pool.fill(make, 0, slack_seed=SYSRAND.randrange(10**6, 2**31 - 10**5), windows=[])
    measured = st.workers["candidate"].profile([0] * len(st.pool.specs), repeat=5)
    rep = profile_built(st.built, None, st.target, backend=st.backend, candidate=st.cand, measured=measured)
    return rep.model_dump(mode="json")
