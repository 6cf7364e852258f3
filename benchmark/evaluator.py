"""The evaluator: every candidate is built, checked and timed in a child process with a wall-clock
timeout and a memory cap (DESIGN.md, "Evaluator protocol"). A crash, hang or blow-up becomes an
EvalResult with `error_kind`, and the caller goes on.

Children are forked from a forkserver that has torch and TVM imported already, so isolation costs
~20 ms per evaluation instead of ~3 s of imports.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from benchmark import baselines
from benchmark.task import Task
from leka.config import BaselineConfig, EvaluatorConfig
from leka.types import EvalResult

_CTX: Any = None


def _context():
    global _CTX
    if _CTX is None:
        # CUDA must be first touched in each child, never in the forkserver that forks them: tvm_ffi's
        # import asks torch.cuda.is_available(), which marks torch's CUDA as unusable after a fork
        # (children then fail "Cannot re-initialize CUDA in forked subprocess"); the NVML check does not
        os.environ.setdefault("TVM_FFI_DISABLE_TORCH_C_DLPACK", "1")
        os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
        _CTX = mp.get_context("forkserver")
        _CTX.set_forkserver_preload(["torch", "tvm", "tvm.relax", "tvm.relax.frontend.torch", "leka.ir",
                                     "benchmark.worker", "benchmark.baselines"])
    return _CTX


def _child(job: dict[str, Any], out_path: str) -> None:
    os.setsid()  # own process group: a timeout kills whatever the candidate spawned too
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning)  # torch.export's internal deprecations
    from benchmark.worker import run_job

    run_job(job, out_path)


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Evaluator:
    """`evaluate(task, candidate)` -> EvalResult. One instance serves a whole run."""

    def __init__(self, cfg: EvaluatorConfig | None = None, backend: str = "llvm",
                 baseline: BaselineConfig | None = None, cache_dir: str | None = None):
        self.cfg = cfg or EvaluatorConfig()
        self.backend = backend
        self.baseline = baseline or BaselineConfig()
        self.cache_dir = cache_dir or self.baseline.cache_dir
        self.n_evals = 0
        self.device_s = 0.0

    def evaluate(self, task: Task, candidate=None, *, time_it: bool = True, baseline: str | None = None,
                 profile: bool = False, export: str | None = None) -> EvalResult:
        return self.evaluate_full(task, candidate, time_it=time_it, baseline=baseline, profile=profile,
                                  export=export)[0]

    def evaluate_full(self, task: Task, candidate=None, *, time_it: bool = True, baseline: str | None = None,
                      profile: bool = False, export: str | None = None) -> tuple[EvalResult, dict | None]:
        """(result, profile report as dict or None)."""
        kind = baseline or self.baseline.kind
        job: dict[str, Any] = {
            "task_path": str(task.path), "task_id": task.id, "backend": self.backend,
            "candidate": candidate.model_dump(mode="json") if candidate is not None else None,
            "evaluator": self.cfg.model_dump(mode="json"), "baseline": kind if time_it else None,
            "time": time_it, "profile": profile, "export": export, "cache_dir": self.cache_dir,
            "threads": len(os.sched_getaffinity(0)),
        }
        if time_it and kind == "tuned":
            d = baselines.ms_dir(task, self.backend, self.baseline.trials, self.cache_dir)
            if not baselines.is_tuned(d):
                return EvalResult(task=task.id, backend=self.backend, baseline=kind, error_kind="bad_input",
                                  error=f"no MetaSchedule database for {task.id} with {self.baseline.trials} trials: "
                                  f"run `leka bench baseline` or `leka bench eval --baseline tuned --trials N` "
                                  f"with tuning allowed"), None
            job["ms_dir"] = str(d)
        return self._run_child(job, task)

    def _run_child(self, job: dict[str, Any], task: Task) -> tuple[EvalResult, dict | None]:
        self.n_evals += 1
        fd, out_path = tempfile.mkstemp(prefix="leka-eval-", suffix=".json")
        os.close(fd)
        os.unlink(out_path)
        t0 = time.perf_counter()
        proc = _context().Process(target=_child, args=(job, out_path), daemon=False)
        proc.start()
        ps = psutil.Process(proc.pid)
        cap = self.cfg.memory_cap_gb * 2**30
        kill_kind = kill_msg = None
        peak = 0
        try:
            while proc.is_alive():
                proc.join(0.05)
                elapsed = time.perf_counter() - t0
                if elapsed > self.cfg.timeout_s:
                    kill_kind, kill_msg = "timeout", f"no result after {self.cfg.timeout_s:g} s (evaluator.timeout_s)"
                    break
                try:
                    rss = _tree_rss(ps)
                except psutil.Error:
                    rss = 0
                peak = max(peak, rss)
                if rss > cap:
                    kill_kind, kill_msg = "oom", (f"resident memory {rss / 2**30:.2f} GiB over the cap of "
                                                  f"{self.cfg.memory_cap_gb:g} GiB (evaluator.memory_cap_gb)")
                    break
        except KeyboardInterrupt:
            _kill_group(proc.pid)
            raise
        finally:
            if kill_kind or proc.is_alive():
                _kill_group(proc.pid)
                proc.join(5)
            self.device_s += time.perf_counter() - t0
        wall = time.perf_counter() - t0
        base = {"task": task.id, "backend": self.backend, "baseline": job["baseline"], "wall_s": wall,
                "seeds": list(self.cfg.seeds), "peak_rss_bytes": peak or None}
        if kill_kind:
            Path(out_path).unlink(missing_ok=True)
            Path(out_path + ".gpu").unlink(missing_ok=True)
            return EvalResult(**base, error_kind=kill_kind, error=kill_msg), None
        p = Path(out_path)
        on_gpu = Path(out_path + ".gpu")
        died_on_gpu = on_gpu.exists()
        on_gpu.unlink(missing_ok=True)
        if not p.exists():
            code = proc.exitcode
            how = f"killed by signal {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit code {code}"
            if died_on_gpu:  # a sticky CUDA error aborts the process; the next evaluation is a fresh child
                return EvalResult(**base, error_kind="gpu_fault", error=f"evaluation process died ({how}) while "
                                  "running on the GPU without a result (a CUDA fault: illegal address, launch "
                                  "failure)"), None
            return EvalResult(**base, error_kind="crash", error=f"evaluation process died ({how}) without a result"), None
        payload = json.loads(p.read_text())
        p.unlink()
        res = EvalResult.model_validate(payload["result"])
        res.wall_s = wall
        return res, payload.get("profile")

