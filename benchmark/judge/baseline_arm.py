"""The baseline arm in the evaluation child: its Timer (`make_timer`, `vm_rotating_timer`: its calls
rotate through the same input sets as the candidate's), its preparation on a second thread beside the
candidate's build (`start_prep`, `Background`), a PyTorch / engine baseline's call made before the
process state is recorded (`python_baseline`), and an engine's refusal (`prep_refusal`). The kinds
themselves, their builds and caches are benchmark/baselines.py's."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmark import engines
from benchmark.baselines import BASELINES, PY_KINDS, prebuild, python_call
from benchmark.judge.outputs import as_numpy
from benchmark.judge.timing import Timer, looped_timer, rotating_timer, times_alone, tvm_timer
from benchmark.roots import cache_root
from benchmark.task import Task
from leka import ir
from leka import tvm_adapter as A


def vm_rotating_timer(runner: A.VMRunner, sets: list[list[np.ndarray]], *,
                      check: Callable[[int, Any], None] | None = None, guard: Callable[[], None] | None = None,
                      cache_dir: str | None = None, hold: int | None = None) -> Timer:
    """A VM's main, its calls rotating through `sets`: in the C++ loop (`looped_timer`, no Python between
    calls), or in a Python loop (`rotating_timer`) where the loop cannot be compiled; `Timer.kind` says which.
    `hold` outputs stay alive (default `call_loop.hold_for(len(sets))`; memory.TimingPlan's lean timing: 0).
    The loop's library goes to `cache_dir` (default: LEKA_CACHE or .leka-cache, as `cache_root`)."""
    dev_sets = [runner.to_device(x) for x in sets]
    hold = A.call_loop.hold_for(len(dev_sets)) if hold is None else hold
    try:
        run = runner.rotating_loop(dev_sets, str(cache_root(cache_dir)), hold=hold)
    except A.CallLoopUnavailable:
        return rotating_timer(runner.vm["main"], dev_sets, check=check, guard=guard, sync=runner.dev.sync,
                              hold=hold)
    return looped_timer(run, len(dev_sets), check=check, guard=guard, sync=runner.dev.sync)


def make_timer(kind: str, *, task: Task, root: ir.Root, backend: str, target, inputs: list[np.ndarray],
               model: Any, ms_dir: str | None = None, cache_dir: str | None = None,
               runner: A.VMRunner | None = None, input_sets: list[list[np.ndarray]] | None = None,
               so_cache: bool = True, check: Callable[[int, Any], None] | None = None,
               hold: int | None = None, memory_cfg: str | None = None, py_call: Callable | None = None,
               threads: int | None = None) -> Timer:
    """A Timer for the baseline, built in the evaluation child (or given prebuilt). With `input_sets`
    (two or more) its calls rotate through them exactly as the candidate's do; else `inputs`, fixed.
    `check(k, last_output)` runs after each sample, untimed, as the candidate's does. `py_call`: the
    PyTorch / engine baseline's call(list of inputs), made before the guard's snapshot (`python_call`)."""
    sets = input_sets if input_sets and len(input_sets) > 1 else None
    if kind in ("untuned", "tuned"):
        runner = runner or prebuild(kind, task=task, root=root, backend=backend, target=target, ms_dir=ms_dir,
                                    cache_dir=cache_dir, so_cache=so_cache, memory_cfg=memory_cfg)
        if sets:
            return vm_rotating_timer(runner, sets, check=check, hold=hold)
        return tvm_timer(runner, runner.to_device(inputs))
    if kind in PY_KINDS:
        fn = py_call or python_call(kind, model, prebuild(kind, task=task, root=root, backend=backend, target=target,
                                                          cache_dir=cache_dir), backend, threads)
        if kind in engines.ENGINES:
            return rotating_timer(fn, [[x] for x in (sets or [inputs])])
        import torch

        tsets = [[[torch.from_numpy(a.copy()) for a in x]] for x in (sets or [inputs])]
        return rotating_timer(fn, tsets, check=check if sets else None)
    raise ValueError(f"unknown baseline {kind!r}; use one of {', '.join(BASELINES)}")


def converts(st: Any) -> bool:
    """The baseline is made from files converted ahead (an engine's model, torch.compile's warm cache)."""
    kind = st.job.get("baseline")
    return kind in engines.ENGINES or (kind == "torch_compile" and not st.gpu)


def python_baseline(st: Any) -> None:
    """A PyTorch / engine baseline timed in this process: its model, its call made (a session, a compile
    and its first run) before the process state is recorded, so that what they set is not the candidate's."""
    job = st.job
    if not (job.get("time") and job.get("baseline") in PY_KINDS) or st.gpu:
        return
    st.model = st.ref_model = st.ref_model or st.task.make_model()  # the baseline is the model itself
    kind = job["baseline"]
    st.base_call = python_call(kind, st.model, st.base_prep.result() if st.base_prep else None,
                              st.backend, job.get("threads", 2))
    if kind == "torch_compile":
        import torch

        st.base_call([torch.from_numpy(as_numpy(t).copy()) for t in st.task.make_inputs(0)])  # compiles

class Background:
    """fn() on a daemon thread (a failed candidate need not wait for it); result() re-raises its error
    where the caller would have met it had fn run inline."""

    def __init__(self, fn: Callable[[], Any]):
        self._value: Any = None
        self._error: BaseException | None = None

        def body() -> None:
            try:
                self._value = fn()
            except BaseException as e:  # noqa: BLE001 - handed to result()
                self._error = e

        self._thread = threading.Thread(target=body, name="leka-baseline", daemon=True)
        self._thread.start()

    def wait(self) -> None:
        self._thread.join()

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def start_prep(st: Any, device_worker: bool, overlap: bool = True) -> Background | None:
    """The baseline's preparation on a second thread, beside the candidate's build (`prebuild`): a TVM
    baseline's build (`overlap`: evaluator.overlap_baseline_build), or an engine's conversion (child
    processes, benchmark/engines.py); None when nothing is prepared ahead."""
    job = st.job
    if not job.get("time") or not ((job.get("baseline") in ("untuned", "tuned") and overlap) or converts(st)):
        return None
    if st.sandboxed and times_alone(st.cfg):  # no baseline arm (issue 44: a slow one reused)
        return None
    return Background(lambda: prebuild(
        job["baseline"], task=st.task, root=st.root, backend=st.backend, target=st.target,
        ms_dir=job.get("ms_dir"), cache_dir=job.get("cache_dir"), so_cache=st.cfg.get("baseline_cache", True),
        memory_cfg=st.plan.memory_cfg, executable_only=device_worker))


def prep_refusal(st: Any) -> str | None:
    """Why an engine cannot take the task (the evaluation's `baseline_unsupported` row), or None."""
    if not converts(st):
        return None
    try:
        st.base_prep.result()
    except engines.BaselineUnsupported as e:
        return f"{st.res.extra.get('baseline_name', st.job['baseline'])}: {e}"
    return None
