"""The evaluation child, as named steps: `prepare` (task, root, caps) -> `build` (static checks on
L2 sources, the candidate's build; the baseline builds meanwhile) -> `check` (several seeds against
the PyTorch references, seed by seed, read memory-mapped from the reference process; process-wide
state guarded) -> `profile_export` -> `time_step` (interleaved
pairs against the baseline, benchmark/judge/timing.py). It writes an EvalResult as JSON.

It runs in a process of its own (benchmark/judge/evaluator.py), so a segfault, hang or memory blow-up in
a candidate ends this process, never the loop. Anything it can explain it writes as data.
"""

from __future__ import annotations

import json
import math
import resource
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmark import baselines
from benchmark.judge import (
    audit,
    baseline_arm,
    floor,
    gpu_timing,
    memory,
    process_state,
    seeds,
    slots,
    timing,
)
from benchmark.judge import refs as refstore
from benchmark.judge.errors import set_error, short_error
from benchmark.judge.outputs import as_numpy, compare, host_view, total_bytes
from benchmark.judge.sandbox import checks as sandboxed
from benchmark.judge.sandbox import control
from benchmark.judge.sandbox import timing as sandbox_timing
from benchmark.roots import load_root
from benchmark.task import load_task_file
from leka import ir
from leka import tvm_adapter as A
from leka.backends import get_backend
from leka.core.types import EvalResult, UserError
from leka.ir import l2_guard


@dataclass
class JobState:
    """What one evaluation job carries from step to step (prepare -> build -> check -> profile/export
    -> time). A step returns False once it has written its failure into `res`."""

    job: dict[str, Any]
    res: EvalResult
    cfg: dict[str, Any]
    backend: str
    task: Any = None
    root: Any = None
    cand: Any = None
    target: Any = None
    atol: float = 1e-4
    rtol: float = 1e-4
    built: Any = None
    runner: Any = None  # A.VMRunner of the candidate
    base_prep: baseline_arm.Background | None = None
    model: Any = None  # the task's model, where the timing baseline is PyTorch / ONNX Runtime
    ref_model: Any = None  # the model computing references in this process (no reference process)
    seeds: list[int] = field(default_factory=list)  # the checked seeds, the fresh one last
    footprint: Any = None  # memory.Footprint of the task
    plan: memory.TimingPlan = memory.STANDARD  # how the timing holds memory (lean for outputs near the cap)
    # the first seeds' inputs and references (the timing rotates through them; references memory-mapped)
    inputs_by_seed: list[list[np.ndarray]] = field(default_factory=list)
    refs_by_seed: list[list[np.ndarray]] = field(default_factory=list)
    ref_degenerate: str | None = None  # seed 0's reference all zero / near constant (benchmark/judge/audit.py)
    profile: dict | None = None
    guard: Any = None  # process_state.Guard once the candidate is about to run
    out_path: str = ""
    gpu: bool = False  # the backend's CUDA runtime (benchmark/judge/gpu_timing.py): GPU lock, device timer, faults
    dmem: Any = None  # gpu_timing.DeviceMemory while this child holds the GPU
    torch_call: Any = None  # a torch / torch.compile baseline, compiled before the GPU lock
    base_call: Any = None  # a PyTorch / engine baseline's call on the CPU, made before the guard's snapshot
    sandboxed: bool = False  # the candidate runs in a sandboxed worker (benchmark/judge/sandbox/checks.py)
    pool: Any = None  # control.Pool: the input pool the workers map read-only
    workers: dict[str, Any] = field(default_factory=dict)  # role -> control.SandboxWorker
    max_calls: int = 1  # calls one timing request may make (outputs held, window offsets)


def prepare(st: JobState) -> bool:
    """Task, imported root, the input-size cap, the candidate and the target."""
    job, cfg, res = st.job, st.cfg, st.res
    st.task = task = load_task_file(job["task_path"])
    res.task = task.id
    st.atol, st.rtol = job.get("atol", task.atol), job.get("rtol", task.rtol)
    try:
        forks_device = sandboxed.on_device(st) and cfg.get("sandbox", True)  # import in a child (roots.py)
        st.root = load_root(task, job.get("cache_dir"), in_child=forks_device)
    except A.ImportFailure as e:
        set_error(res, "import", str(e))
        return False
    params_b, inputs_b = total_bytes(st.root.params.values()), total_bytes(as_numpy(t) for t in task.make_inputs(0))
    size = params_b + inputs_b
    if size > cfg["input_cap_gb"] * 2**30:
        set_error(res, "bad_input", f"inputs + params are {size / 2**30:.2f} GiB, over the cap of "
             f"{cfg['input_cap_gb']} GiB (evaluator.input_cap_gb)")
        return False
    st.footprint = memory.Footprint(params=params_b, inputs=inputs_b, outputs=st.root.output_bytes)
    cap_gb = job.get("memory_cap_gb", cfg.get("memory_cap_gb"))
    refused = memory.refusal(st.footprint, cap_gb)
    if refused:
        set_error(res, "bad_input", refused)
        return False
    if job.get("time") and job.get("baseline"):
        refused = baselines.refusal(job["baseline"], st.backend)  # the backend's table (leka/backends)
        if refused:
            set_error(res, "bad_input", refused)
            return False
        res.extra["baseline_name"] = baselines.label(job["baseline"], st.backend, threads=job.get("threads", 2),
                                                     trials=int(job.get("trials") or 64))
    st.seeds = seeds.check_seeds(st)
    st.target = A.make_target(st.backend)
    st.gpu = get_backend(st.backend).cuda
    why = sandboxed.unsupported(st)
    st.sandboxed = why is None
    if why:
        res.extra["sandbox"] = f"off: {why}"
        torch.set_num_threads(job.get("threads", 2))
        A.start_thread_pool(job.get("threads", 2))  # TVM's default on x86 is half the cores (1 of 2 here)
    if job.get("refs_dir"):  # the runner starts the reference process on this (benchmark/judge/runner.py)
        cap, where = memory.cap_bytes(cap_gb, st.footprint)
        # sandboxed, the judge computes references itself: the candidate never runs in its process
        rec = {"cap_bytes": cap, "cap_where": where, "seeds": st.seeds, "refs": not st.sandboxed}
        Path(st.out_path + ".prepared.tmp").write_text(json.dumps(rec))
        Path(st.out_path + ".prepared.tmp").replace(st.out_path + ".prepared")
        if st.sandboxed:
            job["refs_dir"] = None
    st.cand = (ir.Candidate.model_validate(job["candidate"]) if job.get("candidate")
               else ir.root_candidate(task, st.backend, st.root))
    # the GPU's timing holds no rotating outputs (gpu_timing): its VMs keep TVM's default allocator
    st.plan = (memory.timing_plan(st.footprint, cap_gb, cfg.get("timing_memory", "auto")) if not st.gpu
               else memory.STANDARD)
    if st.plan.lean:
        res.extra["timing_memory"] = st.plan.why
    if st.gpu:
        A.cuda_runtime_setup()
    return True


def build(st: JobState) -> bool:
    """Static checks on L2 sources, then the candidate's build (the TVM baseline's build overlaps it
    on a second thread, joined before anything runs so checks and timings have the machine)."""
    job, cfg, res = st.job, st.cfg, st.res
    if cfg.get("static_check", True):
        found = l2_guard.scan_candidate(st.cand)
        if found:
            set_error(res, "illegal_source", l2_guard.describe(found))
            return False
    device_worker = st.sandboxed and sandboxed.on_device(st)  # the device is the worker's, never the judge's
    st.base_prep = baseline_arm.start_prep(st, device_worker, overlap=cfg.get("overlap_baseline_build", True))
    t0 = time.perf_counter()
    try:
        # kernels compiled by earlier evaluations are loaded, not rebuilt; an export needs one
        # whole library, so that build skips the cache
        kc = (str(baselines.cache_root(job.get("cache_dir")) / "kernels")
              if cfg.get("kernel_cache", True) and not job.get("export") else None)
        st.built = ir.build_candidate(st.cand, st.target, st.root.params, kernel_cache=kc,
                                      check_objects=cfg.get("static_check", True))
        if st.built.kernels:
            res.extra["kernels"] = st.built.kernels
    except ir.IllegalObject as e:  # the compiled L2 object's check (leka/ir/l2_object.py), as the text's
        res.build_s = time.perf_counter() - t0
        set_error(res, "illegal_source", str(e))
        return False
    except Exception as e:  # noqa: BLE001 - a candidate that does not build is data
        res.build_s = time.perf_counter() - t0
        set_error(res, "compile", short_error(e))
        return False
    res.build_s = time.perf_counter() - t0
    res.compiled = True
    res.planned_memory_bytes = A.planned_memory_bytes(st.built.lowered, st.target)
    if st.base_prep is not None:
        st.base_prep.wait()  # before the GPU lock: a baseline still building must not hold the GPU
        refused = baseline_arm.prep_refusal(st)
        if refused:
            set_error(res, "baseline_unsupported", refused)
            return False
    if st.gpu:
        _hold_gpu(st, None if device_worker else A.device_for(st.backend))
    elif sandboxed.on_device(st):
        # OpenCL: checks and timing hold the device alone too (the same lock, LEKA_GPU_LOCK), so
        # evaluations side by side (a grid, the H200 A/A) never time each other's kernels; builds overlap
        gpu_timing.hold_gpu_lock()
    if not st.sandboxed:
        ir.load_l2(st.built)  # sandbox off: the candidate runs here, by the user's choice
    if not device_worker and not (st.sandboxed and st.built.l2_libs):  # else the worker makes its VM
        st.runner = A.VMRunner(st.built.executable, A.device_for(st.backend),
                               memory_cfg=None if st.sandboxed else st.plan.memory_cfg)
    if st.sandboxed:
        try:
            sandboxed.start(st)  # from here on the candidate runs only in its sandboxed worker
        except (control.WorkerDied, control.WorkerError) as e:
            set_error(res, "runtime", f"starting the sandboxed worker: {e}")
            return False
    return True


def _hold_gpu(st: JobState, dev) -> None:
    """Builds overlap across evaluation children; checks and timing hold the GPU alone (released when
    this child exits, whatever ends it). A torch baseline is compiled before, on the CPU's time."""
    job = st.job
    if dev is not None and job.get("time") and job.get("baseline") in baselines.PY_KINDS:
        st.torch_call = gpu_timing.torch_gpu_call(job["baseline"], st.task.make_model(),
                                                  [as_numpy(t) for t in st.task.make_inputs(0)],
                                                  prepared=st.base_prep.result() if st.base_prep else None)
    gpu_timing.hold_gpu_lock()  # until this child exits
    # a CUDA fault can abort the process before it writes a result: this marker tells the runner that
    # the child died on the GPU (benchmark/judge/runner.py reports that as gpu_fault)
    Path(st.out_path + ".gpu").write_text("")
    if dev is not None:
        st.dmem = gpu_timing.DeviceMemory(dev)


def _run_candidate(st: JobState, seed: int, first: bool) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
    """(inputs, outputs) of one checked run; None once the failure is in res. The outputs are views of
    the candidate's own output tensors where the device is the CPU (one output set in memory)."""
    runner, res = st.runner, st.res
    inputs = [as_numpy(t) for t in st.task.make_inputs(seed)]
    if seeds.poison_run(st.cfg) and first:
        # stale buffers from a run on other valid inputs must not pass as this seed's output. Only the
        # first seed needs a run of its own for that: each later seed's run follows the previous
        # seed's, on other valid inputs, whose outputs are dropped once compared (a program of tens of
        # seconds spent 3 of its 8 checked calls on poison runs: bench_kernelbench_format.md)
        poison = [as_numpy(t) for t in st.task.make_inputs(seed + 7919)]
        try:
            runner.run_device(runner.to_device(poison))
        except Exception:  # noqa: BLE001 - the checked run below reports the error
            pass
        del poison
    dev_args = runner.to_device(inputs)
    try:
        outs = [host_view(o) for o in runner.run_device(dev_args)]
    except Exception as e:  # noqa: BLE001
        set_error(res, "runtime", f"seed {seed}: {short_error(e)}")
        return None
    for i, (a, d) in enumerate(zip(inputs, dev_args, strict=True)):
        if not np.array_equal(a, host_view(d), equal_nan=True):
            set_error(res, "input_mutated", f"seed {seed}: the candidate wrote into input {i}")
            return None
    return inputs, outs


def _references(st: JobState, seed: int) -> list[np.ndarray]:
    """The seed's PyTorch outputs: memory-mapped from the reference process's files, or (no reference
    process: an RPC child, a job run by hand) computed here, after the candidate's run of that seed."""
    if st.job.get("refs_dir"):
        return refstore.open_refs(st.job["refs_dir"], seed)
    if st.ref_model is None:
        st.ref_model = st.task.make_model()
    with torch.no_grad():
        return refstore.flat_outputs(st.ref_model(*st.task.make_inputs(seed)))


def check(st: JobState) -> bool:
    """Seed by seed: the candidate's run, then that seed's reference, compared chunk by chunk; only
    the first seeds' inputs and references stay (the timing rotates through them). A reference made
    in this process comes after the candidate's run of its seed. A job with `check` False (an export of
    a candidate its own evaluation checked: benchmark/judge/evaluator.py) runs nothing: no verdict is made."""
    if st.job.get("check") is False:
        st.res.extra["checked"] = False
        return True
    if st.sandboxed:
        return sandboxed.check(st)
    res, t0 = st.res, time.perf_counter()
    checked = st.seeds or seeds.check_seeds(st)
    keep = _timing_sets(st, len(checked))
    baseline_arm.python_baseline(st)  # before the guard's snapshot: what torch.compile and the engines set is not the candidate's
    st.guard = process_state.Guard() if st.cfg.get("process_check", True) else None
    max_abs = max_rel = 0.0
    out_bytes = 0
    for n, seed in enumerate(checked):
        got = _run_candidate(st, seed, first=n == 0)
        if got is None or not _guard_ok(st, f"seed {seed}"):
            res.check_s = time.perf_counter() - t0
            return False
        inputs, outs = got
        del got  # the outputs go once compared: the next seed's run can reuse their memory
        out_bytes = out_bytes or total_bytes(outs)
        try:
            refs = _references(st, seed)
        except refstore.RefsFailed as e:
            set_error(res, "runtime", f"seed {seed}: {e}")
            res.check_s = time.perf_counter() - t0
            return False
        kind, msg, ea, er = compare(outs, refs, st.atol, st.rtol)
        del outs
        if not math.isnan(ea):
            max_abs, max_rel = max(max_abs, ea), max(max_rel, er)
        if kind:
            res.max_abs_err, res.max_rel_err = (None if math.isnan(ea) else ea), (None if math.isnan(er) else er)
            set_error(res, kind, f"seed {seed}: {msg}")
            res.check_s = time.perf_counter() - t0
            return False
        if n < keep:
            st.inputs_by_seed.append(inputs)
            st.refs_by_seed.append(refs)
        del inputs, refs
    res.max_abs_err, res.max_rel_err = max_abs, max_rel
    res.correct = True
    res.check_s = time.perf_counter() - t0
    res.peak_memory_bytes = int((res.planned_memory_bytes or 0) + total_bytes(st.root.params.values())
                                + total_bytes(st.inputs_by_seed[0]) + out_bytes)
    if st.dmem is not None:
        st.dmem.sample()
        res.peak_device_bytes = st.dmem.bytes()
    return True


def _guard_ok(st: JobState, where: str) -> bool:
    if st.guard is None:
        return True
    try:
        st.guard.check()
    except process_state.ProcessStateChanged as e:
        set_error(st.res, "process_state", f"after the candidate's run ({where}): {e}")
        return False
    return True


def profile_export(st: JobState) -> bool:
    """The profile (advice: its failure is noted, not fatal) and the exported library, on seed-0 data."""
    job = st.job
    if job.get("profile") and st.sandboxed:
        try:
            st.profile = sandboxed.profile(st)
        except control.WorkerTimeout as e:  # advice, but the worker it killed was the candidate's
            return sandboxed.fail(st, e, "profile")
        except Exception as e:  # noqa: BLE001 - a profile is advice; its failure is noted
            st.profile = {"error": short_error(e)}
    elif job.get("profile"):
        try:
            from profilers.profile import profile_built

            dev_args = st.runner.to_device(st.inputs_by_seed[0])  # never on zeros: seed-0 data
            rep = profile_built(st.built, dev_args, st.target, backend=st.backend, candidate=st.cand)
            st.profile = rep.model_dump(mode="json")
        except Exception as e:  # noqa: BLE001 - a profile is advice; its failure is noted
            st.profile = {"error": short_error(e)}
    if job.get("export"):
        ir.export(st.built, job["export"])
    return True


def _timing_sets(st: JobState, available: int | None = None) -> int:
    """How many of the checked input sets the timing rotates through (1 = one fixed set, TVM's loop):
    evaluator.timing_input_sets, or the lean plan's (memory.TimingPlan); at most those checked."""
    k = int(st.cfg.get("timing_input_sets", 2))
    if st.plan.n_sets and k > 1:
        k = max(k, st.plan.n_sets)
    return max(1, min(k, len(st.inputs_by_seed) if available is None else available))


def _candidate_timer(st: JobState, n_sets: int) -> timing.Timer:
    runner = st.runner
    if n_sets == 1:
        return timing.tvm_timer(runner, runner.to_device(st.inputs_by_seed[0]))

    def check_out(k: int, out) -> None:
        outs = [host_view(o) for o in A.flatten_outputs(out)]  # no copy on the CPU: one output set less
        kind, msg, _, _ = compare(outs, st.refs_by_seed[k], st.atol, st.rtol)
        if kind:
            raise timing.StaleOutput(f"the last timed call of a sample, on input set {k}: {msg}")

    check = check_out if st.cfg.get("check_timed_outputs", True) else None
    guard = st.guard.check if st.guard is not None else None
    return baseline_arm.vm_rotating_timer(runner, st.inputs_by_seed[:n_sets], check=check, guard=guard,
                                       hold=st.plan.hold)


def _baseline_check(st: JobState):
    """The same untimed comparison after each baseline sample as after each candidate sample, its
    verdict unused: the comparison reads outputs and references, and done after one arm's samples
    only, it left the caches unlike for the two (A/A on memory-bound kernels: 0.86-0.94 with it on
    the candidate alone, 0.97-1.01 with neither or both; experiments/results/bench_evaluator.md)."""
    if not st.cfg.get("check_timed_outputs", True):
        return None

    def same_work(k: int, out) -> None:
        is_torch = isinstance(out, torch.Tensor) or (
            isinstance(out, (list, tuple)) and all(isinstance(o, torch.Tensor) for o in out))
        outs = refstore.flat_outputs(out) if is_torch else [host_view(o) for o in A.flatten_outputs(out)]
        compare(outs, st.refs_by_seed[k], st.atol, st.rtol)

    return same_work


def time_step(st: JobState) -> bool:
    """Paired, interleaved timing against the baseline in this one process."""
    job, cfg, res = st.job, st.cfg, st.res
    if not (job.get("time") and job.get("baseline")):
        return True
    if st.sandboxed:
        return sandbox_timing.time_step(st)
    if st.gpu:
        return gpu_timing.time_step(st)
    n_sets = _timing_sets(st)
    base = baseline_arm.make_timer(job["baseline"], task=st.task, root=st.root, backend=st.backend,
                                target=st.target, inputs=st.inputs_by_seed[0], model=st.model,
                                ms_dir=job.get("ms_dir"), cache_dir=job.get("cache_dir"),
                                runner=st.base_prep.result() if st.base_prep is not None else None,
                                input_sets=st.inputs_by_seed[:n_sets] if n_sets > 1 else None,
                                so_cache=cfg.get("baseline_cache", True),
                                check=_baseline_check(st) if n_sets > 1 else None,
                                hold=st.plan.hold, memory_cfg=st.plan.memory_cfg, py_call=st.base_call,
                                threads=job.get("threads", 2))
    cand = _candidate_timer(st, n_sets)
    tm = timing.judged_pairs(cand, base, cfg, res)
    if tm is None:
        return False
    timing.record(res, tm)
    res.extra["timing_input_sets"] = n_sets
    # how each arm's calls are made: cpp_loop (rotating, no Python between calls), tvm_loop (one fixed
    # set), python_loop (no C++ compiler, or a torch / ONNX Runtime baseline)
    res.extra["timer"] = f"candidate {cand.kind}, baseline {base.kind}"
    return True


STEPS = (prepare, build, check, profile_export, time_step, floor.physical_floor, audit.audit_step)
# under measuring slots (a grid), these only compete for the cores and hold the CPU gate shared; the
# others run and time programs on them and hold it alone (benchmark/judge/slots.py cpu_gate)
SHARED_STEPS = ("prepare", "build", "physical_floor", "audit_step")


def run_job(job: dict[str, Any], out_path: str) -> None:
    """Entry point of the child: the steps in order. Always writes out_path unless the process dies."""
    # one torch thread until the sandboxed workers are forked: torch's OpenMP runtime is the libgomp.so.1
    # that L2 kernels link, and a pool made before fork leaves the worker's copy waiting for threads
    # that do not exist (benchmark/judge/sandbox/checks.py raises it to the job's count once they are forked)
    torch.set_num_threads(1)
    t_start = time.perf_counter()
    cfg = job["evaluator"]
    st = JobState(job=job, cfg=cfg, backend=job.get("backend", "llvm"), out_path=out_path,
                  res=EvalResult(task=job.get("task_id", "?"), backend=job.get("backend", "llvm"),
                                 baseline=job.get("baseline"), seeds=list(cfg["seeds"])))
    phases: dict[str, float] = {}  # wall seconds per step: where an evaluation's time goes
    st.res.extra["phase_s"] = phases
    gated = int(cfg.get("measure_slots") or 0) > 0
    try:
        for step in STEPS:
            t0 = time.perf_counter()
            # the step under way, for the runner's message when it kills this child (timeout, memory)
            Path(out_path + ".step").write_text(step.__name__)
            with slots.cpu_gate(st.backend, step.__name__ not in SHARED_STEPS, gated, job.get("slot_dir")) as gate:
                if gate.waited_s:
                    st.res.extra["gate_wait_s"] = round(st.res.extra.get("gate_wait_s", 0.0) + gate.waited_s, 3)
                ok = step(st)
            phases[step.__name__] = round(time.perf_counter() - t0, 3)
            if not ok:
                break
    except UserError as e:
        set_error(st.res, "bad_input", str(e))
    except Exception as e:  # noqa: BLE001 - anything else is still a result, with its traceback
        set_error(st.res, "runtime", f"{short_error(e)}\n{traceback.format_exc()[-1500:]}")
    finally:
        sandboxed.close(st)
    res = st.res
    if st.gpu and res.error and res.error_kind in ("runtime", "crash") and gpu_timing.is_cuda_fault(res.error):
        res.error_kind = "gpu_fault"  # sticky: this child's context dies with it
    res.peak_rss_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    res.wall_s = time.perf_counter() - t_start
    payload = {"result": res.model_dump(mode="json"), "profile": st.profile}
    tmp = Path(out_path + ".tmp")
    tmp.write_text(json.dumps(payload))
    tmp.replace(out_path)

if __name__ == "__main__":  # `python -m benchmark.judge.job JOB.json OUT.json` (debugging a job by hand)
    run_job(json.loads(Path(sys.argv[1]).read_text()), sys.argv[2])
