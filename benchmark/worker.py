"""The evaluation child: builds one candidate, checks it against the PyTorch reference over several
seeds, times it against its baseline in interleaved pairs, and writes an EvalResult as JSON.

It runs in a process of its own (benchmark/evaluator.py), so a segfault, hang or memory blow-up in
a candidate ends this process, never the loop. Anything it can explain it writes as data.
"""

from __future__ import annotations

import json
import math
import resource
import statistics
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from leka.types import EvalResult


def _err(res: EvalResult, kind: str, msg: str) -> EvalResult:
    res.error_kind = kind  # type: ignore[assignment]
    res.error = msg[:4000]
    return res


def _np(t) -> np.ndarray:
    import torch

    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


def _flat_torch(out) -> list[np.ndarray]:
    import torch

    if isinstance(out, torch.Tensor):
        return [_np(out)]
    if isinstance(out, (list, tuple)):
        res: list[np.ndarray] = []
        for o in out:
            res.extend(_flat_torch(o))
        return res
    return [np.asarray(out)]


def _short(e: BaseException) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    if not lines:
        return type(e).__name__
    # TVM's messages put the diagnostic last, after a C++ backtrace
    tail = lines[-1] if len(lines) > 3 and "Traceback" in str(e) else " | ".join(lines[:3])
    return f"{type(e).__name__}: {tail}"


def compare(outs: list[np.ndarray], refs: list[np.ndarray], atol: float, rtol: float) -> tuple[str | None, str, float, float]:
    """(error_kind or None, message, max_abs_err, max_rel_err)."""
    if len(outs) != len(refs):
        return "shape", f"candidate returned {len(outs)} output(s), reference {len(refs)}", math.nan, math.nan
    max_abs = max_rel = 0.0
    for i, (o, r) in enumerate(zip(outs, refs, strict=True)):
        if o.shape != r.shape:
            return "shape", f"output {i}: shape {o.shape}, expected {r.shape}", math.nan, math.nan
        if o.dtype != r.dtype:
            return "shape", f"output {i}: dtype {o.dtype}, expected {r.dtype}", math.nan, math.nan
        if o.dtype.kind in "fc":
            bad = ~np.isfinite(o) & np.isfinite(r)
            if bad.any():
                return "nan", f"output {i}: {int(bad.sum())} NaN/Inf value(s) where the reference is finite", math.nan, math.nan
        of, rf = o.astype(np.float64), r.astype(np.float64)
        diff = np.abs(of - rf)
        fin = np.isfinite(diff)
        if fin.any():
            max_abs = max(max_abs, float(diff[fin].max()))
            max_rel = max(max_rel, float((diff[fin] / (np.abs(rf[fin]) + 1e-12)).max()))
        if not np.allclose(of, rf, atol=atol, rtol=rtol, equal_nan=True):
            n = int((~np.isclose(of, rf, atol=atol, rtol=rtol, equal_nan=True)).sum())
            return ("mismatch", f"output {i}: {n} of {o.size} values outside atol={atol:g} rtol={rtol:g} "
                    f"(max abs err {max_abs:.3g})", max_abs, max_rel)
    return None, "", max_abs, max_rel


class Timer:
    """Something that can be timed: `sample(number)` returns seconds per call for one sample."""

    def __init__(self, sample: Callable[[int], float]):
        self.sample = sample


def tvm_timer(runner, dev_args) -> Timer:
    return Timer(lambda n: runner.time_per_call(dev_args, n))


def python_timer(fn: Callable[[], Any]) -> Timer:
    def sample(n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) / n

    return Timer(sample)


def paired_timing(cand: Timer, base: Timer, cfg: dict[str, Any]) -> dict[str, Any]:
    """A B A B ... (order alternating per pair), warm-up first; `number` per sample adapts so one
    sample lasts ~sample_s; the pair count fits timing_budget_s within [min_pairs, max_pairs]."""
    t0 = time.perf_counter()
    for _ in range(max(1, cfg["warmup"])):
        tc1 = cand.sample(1)
        tb1 = base.sample(1)
    # a sample is the best of `reps` short runs: a preempted run (other processes on the same
    # cores) then costs one repetition, not the pair; slow calls (>= sample_s) run once
    reps = max(1, int(cfg.get("sample_repeats", 3)))
    nc = max(1, math.ceil(cfg["sample_s"] / reps / max(tc1, 1e-7)))
    nb = max(1, math.ceil(cfg["sample_s"] / reps / max(tb1, 1e-7)))
    rc = reps if nc * tc1 < cfg["sample_s"] else 1
    rb = reps if nb * tb1 < cfg["sample_s"] else 1

    def one(t: Timer, n: int, r: int) -> float:
        return min(t.sample(n) for _ in range(r))

    per_pair = rc * nc * tc1 + rb * nb * tb1
    pairs = int(min(cfg["max_pairs"], max(cfg["min_pairs"], cfg["timing_budget_s"] // max(per_pair, 1e-9))))
    tcs, tbs = [], []
    for i in range(pairs):
        if i % 2 == 0:
            tc = one(cand, nc, rc)
            tb = one(base, nb, rb)
        else:
            tb = one(base, nb, rb)
            tc = one(cand, nc, rc)
        tcs.append(tc)
        tbs.append(tb)
    ratios = sorted(b / c for b, c in zip(tbs, tcs, strict=True) if c > 0)
    med = statistics.median(ratios)
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 4 else [ratios[0], med, ratios[-1]]
    spread = (q[-1] - q[0]) / med if med > 0 else math.inf
    return {"speedup": med, "t_candidate_s": statistics.median(tcs), "t_baseline_s": statistics.median(tbs),
            "spread": spread, "pairs": pairs, "number": [nc, nb], "repeats": [rc, rb], "timing_s": time.perf_counter() - t0}


def _nbytes(arrays) -> int:
    return int(sum(np.asarray(a).nbytes for a in arrays))


class _Background:
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


def run_job(job: dict[str, Any], out_path: str) -> None:
    """Entry point of the child. Always writes out_path unless the process itself dies."""
    import torch

    from benchmark import baselines
    from benchmark.roots import load_root
    from benchmark.task import load_task_file
    from leka import ir
    from leka import tvm_adapter as A
    from leka.types import UserError

    torch.set_num_threads(job.get("threads", 2))
    t_start = time.perf_counter()
    cfg = job["evaluator"]
    backend = job.get("backend", "llvm")
    res = EvalResult(task=job.get("task_id", "?"), backend=backend, baseline=job.get("baseline"),
                     seeds=list(cfg["seeds"]))
    profile = None
    gpu = backend == "cuda"
    if gpu:
        from benchmark import gpu_timing

        A.cuda_runtime_setup()

    def finish() -> None:
        if gpu and res.error and res.error_kind in ("runtime", "crash") and gpu_timing.is_cuda_fault(res.error):
            res.error_kind = "gpu_fault"  # type: ignore[assignment] # sticky: this child's context dies with it
        res.peak_rss_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        res.wall_s = time.perf_counter() - t_start
        payload = {"result": res.model_dump(mode="json"), "profile": profile}
        tmp = Path(out_path + ".tmp")
        tmp.write_text(json.dumps(payload))
        tmp.replace(out_path)

    try:
        task = load_task_file(job["task_path"])
        res.task = task.id
        atol, rtol = job.get("atol", task.atol), job.get("rtol", task.rtol)
        try:
            root = load_root(task, cache_dir=job.get("cache_dir"))
        except A.ImportFailure as e:
            _err(res, "import", str(e))
            return finish()
        size = _nbytes(root.params.values()) + _nbytes(_np(t) for t in task.make_inputs(0))
        if size > cfg["input_cap_gb"] * 2**30:
            _err(res, "bad_input", f"inputs + params are {size / 2**30:.2f} GiB, over the cap of "
                 f"{cfg['input_cap_gb']} GiB (evaluator.input_cap_gb)")
            return finish()
        cand = ir.Candidate.model_validate(job["candidate"]) if job.get("candidate") else ir.root_candidate(task, backend, root)
        target = A.make_target(backend)
        dev = A.device_for(backend)
        base_prep = None
        if job.get("time") and job.get("baseline") in ("untuned", "tuned") and cfg.get("overlap_baseline_build", True):
            # the baseline's build + link overlaps the candidate's (half a Level-3 evaluation); joined
            # before anything runs, so checks and timings still have the machine to themselves
            base_prep = _Background(lambda: baselines.prebuild(
                job["baseline"], task=task, root=root, backend=backend, target=target,
                ms_dir=job.get("ms_dir"), cache_dir=job.get("cache_dir")))
        t0 = time.perf_counter()
        try:
            built = ir.build_candidate(cand, target, root.params)
        except Exception as e:  # noqa: BLE001 - a candidate that does not build is data
            res.build_s = time.perf_counter() - t0
            _err(res, "compile", _short(e))
            return finish()
        res.build_s = time.perf_counter() - t0
        res.compiled = True
        res.planned_memory_bytes = A.planned_memory_bytes(built.lowered, target)
        torch_call = None
        if gpu and job.get("time") and job.get("baseline") in ("torch", "torch_compile"):
            torch_call = gpu_timing.torch_gpu_call(job["baseline"], task.make_model(),
                                                   [_np(t) for t in task.make_inputs(0)])
        if gpu:  # builds overlap across evaluation children; checks and timing hold the GPU alone
            gpu_lock = gpu_timing.gpu_lock()
            gpu_lock.__enter__()  # released when this child exits, whatever ends it
            # a CUDA fault can abort the process before it writes a result: this marker tells the parent
            # that the child died on the GPU (benchmark/evaluator.py reports that as gpu_fault)
            Path(out_path + ".gpu").write_text("")
            dmem = gpu_timing.DeviceMemory(dev)
        runner = A.VMRunner(built.executable, dev)
        if base_prep is not None:
            base_prep.wait()

        # ---- correctness: candidate outputs for every seed first, the reference afterwards, so a
        # candidate can never read a reference result that already exists in this process
        t0 = time.perf_counter()
        outs_by_seed, inputs_by_seed = [], []
        for seed in cfg["seeds"]:
            inputs = [_np(t) for t in task.make_inputs(seed)]
            if cfg.get("poison", True):
                # stale buffers from a run on other valid inputs must not pass as this seed's output
                poison = [_np(t) for t in task.make_inputs(seed + 7919)]
                try:
                    runner.run_device(runner.to_device(poison))
                except Exception:  # noqa: BLE001 - the checked run below reports the error
                    pass
            dev_args = runner.to_device(inputs)
            try:
                outs = [o.numpy() for o in runner.run_device(dev_args)]
            except Exception as e:  # noqa: BLE001
                _err(res, "runtime", f"seed {seed}: {_short(e)}")
                res.check_s = time.perf_counter() - t0
                return finish()
            for i, (a, d) in enumerate(zip(inputs, dev_args, strict=True)):
                if not np.array_equal(a, d.numpy(), equal_nan=True):
                    _err(res, "input_mutated", f"seed {seed}: the candidate wrote into input {i}")
                    res.check_s = time.perf_counter() - t0
                    return finish()
            outs_by_seed.append(outs)
            inputs_by_seed.append(inputs)
        model = task.make_model()
        max_abs = max_rel = 0.0
        for seed, outs in zip(cfg["seeds"], outs_by_seed, strict=True):
            with torch.no_grad():
                refs = _flat_torch(model(*task.make_inputs(seed)))
            kind, msg, ea, er = compare(outs, refs, atol, rtol)
            if not math.isnan(ea):
                max_abs, max_rel = max(max_abs, ea), max(max_rel, er)
            if kind:
                res.max_abs_err, res.max_rel_err = (None if math.isnan(ea) else ea), (None if math.isnan(er) else er)
                _err(res, kind, f"seed {seed}: {msg}")
                res.check_s = time.perf_counter() - t0
                return finish()
        res.max_abs_err, res.max_rel_err = max_abs, max_rel
        res.correct = True
        res.check_s = time.perf_counter() - t0
        out_bytes = _nbytes(outs_by_seed[0])
        res.peak_memory_bytes = int((res.planned_memory_bytes or 0) + _nbytes(root.params.values())
                                    + _nbytes(inputs_by_seed[0]) + out_bytes)
        if gpu:
            dmem.sample()
            res.peak_device_bytes = dmem.bytes()

        dev_args = runner.to_device(inputs_by_seed[0])  # never time on zeros: seed-0 data
        if job.get("profile"):
            try:
                from profilers.profile import profile_built

                rep = profile_built(built, dev_args, target, backend=backend, candidate=cand)
                profile = rep.model_dump(mode="json")
            except Exception as e:  # noqa: BLE001 - a profile is advice; its failure is noted
                profile = {"error": _short(e)}
        if job.get("export"):
            ir.export(built, job["export"])

        # ---- timing against the baseline, interleaved in this one process
        if job.get("time") and job.get("baseline"):
            prepped = base_prep.result() if base_prep is not None else None
            if gpu:
                flusher = A.L2Flusher(dev)
                base = gpu_timing.baseline_timer(job["baseline"], task=task, root=root, target=target,
                                                 inputs=inputs_by_seed[0], model=model, ms_dir=job.get("ms_dir"),
                                                 cache_dir=job.get("cache_dir"), runner=prepped, flusher=flusher,
                                                 torch_call=torch_call)
                cand_timer = gpu_timing.tvm_gpu_timer(runner, dev_args, flusher)
            else:
                base = baselines.make_timer(job["baseline"], task=task, root=root, backend=backend,
                                            target=target, inputs=inputs_by_seed[0], model=model,
                                            ms_dir=job.get("ms_dir"), cache_dir=job.get("cache_dir"),
                                            runner=prepped)
                cand_timer = tvm_timer(runner, dev_args)
            tm = paired_timing(cand_timer, base, cfg)
            if gpu:
                dmem.sample()
                res.peak_device_bytes = dmem.bytes()
                res.extra["timer"] = "device (CUDA events), L2 flushed before each call"
            res.speedup = tm["speedup"]
            res.t_candidate_s, res.t_baseline_s = tm["t_candidate_s"], tm["t_baseline_s"]
            res.timing_spread, res.n_pairs, res.timing_s = tm["spread"], tm["pairs"], tm["timing_s"]
            res.timing_valid = tm["spread"] <= cfg["max_spread"]
            res.extra["number"] = tm["number"]
            if not res.timing_valid:
                _err(res, "timing_invalid", f"timing spread {tm['spread']:.3f} over the bound "
                     f"{cfg['max_spread']} (evaluator.max_spread); speedup not trusted")
        return finish()
    except UserError as e:
        _err(res, "bad_input", str(e))
        return finish()
    except Exception as e:  # noqa: BLE001 - anything else is still a result, with its traceback
        _err(res, "runtime", f"{_short(e)}\n{traceback.format_exc()[-1500:]}")
        return finish()


if __name__ == "__main__":  # `python -m benchmark.worker JOB.json OUT.json` (debugging a job by hand)
    run_job(json.loads(Path(sys.argv[1]).read_text()), sys.argv[2])
