"""The evaluator: every candidate is built, checked and timed by a runner (benchmark/judge/runner.py: by
default a child process with a wall-clock timeout and a memory cap; README "Evaluator protocol").
A crash, hang or blow-up becomes an EvalResult with `error_kind`, and the caller goes on.

Local children are forked from a forkserver that has torch and TVM imported already, so isolation
costs ~20 ms per evaluation instead of ~3 s of imports.
"""

from __future__ import annotations

import os
import time
from typing import Any

from benchmark import baselines
from benchmark.judge import runner as runners
from benchmark.task import Task
from leka.core.config import BaselineConfig, DeviceConfig, EvaluatorConfig
from leka.core.devices import parse_device
from leka.core.levels import extension_modules
from leka.core.protocols import Runner
from leka.core.types import EvalResult


class Evaluator:
    """`evaluate(task, candidate)` -> EvalResult. One instance serves a whole run."""

    def __init__(self, cfg: EvaluatorConfig | None = None, backend: str = "llvm",
                 baseline: BaselineConfig | None = None, cache_dir: str | None = None,
                 runner: Runner | None = None, device: DeviceConfig | None = None):
        self.cfg = cfg or EvaluatorConfig()
        # None: this machine; else the remote device's config, handed to the job as a dict
        self.device = device.model_dump(mode="json") if device is not None and parse_device(device.url) else None
        # where jobs run (benchmark/judge/runner.py): a board's rpc runner (build here, check and time there)
        # or a forked local child, unless a runner is passed in
        self.runner: Runner = runner or runners.create("rpc" if self.device else "local", timeout_s=self.cfg.timeout_s,
                                                       memory_cap_gb=self.cfg.memory_cap_gb,
                                                       measure_slots=self.cfg.measure_slots)
        self.backend = backend
        self.baseline = baseline or BaselineConfig()
        self.cache_dir = cache_dir or self.baseline.cache_dir
        self.n_evals = 0
        self.device_s = 0.0
        self.wait_s = 0.0  # waiting for a measuring slot (benchmark/judge/slots.py): not the run's time

    def evaluate(self, task: Task, candidate=None, *, time_it: bool = True, baseline: str | None = None,
                 profile: bool = False, export: str | None = None, noise_floor: bool = False,
                 check: bool = True) -> EvalResult:
        return self.evaluate_full(task, candidate, time_it=time_it, baseline=baseline, profile=profile,
                                  export=export, noise_floor=noise_floor, check=check)[0]

    def evaluate_full(self, task: Task, candidate=None, *, time_it: bool = True, baseline: str | None = None,
                      profile: bool = False, export: str | None = None,
                      noise_floor: bool = False, is_root: bool = False, timing_budget_s: float | None = None,
                      decide_below: float | None = None, check: bool = True,
                      reuse_baseline: list[float] | None = None) -> tuple[EvalResult, dict | None]:
        """(result, profile report as dict or None). `noise_floor`: also time the baseline against itself
        (EvalResult.extra["noise_floor"]; on in every evaluation with evaluator.noise_floor); `is_root`: the
        candidate is the task's root, which against a baseline that is its own program (untuned TVM:
        `baselines.is_root_program`) is an A-vs-A already, so that comparison is the noise floor and no
        second one is timed. `timing_budget_s`: this evaluation's timing phase (the run's last evaluation
        gets what is left of the budget); `decide_below`: timing stops once the speedup is decided to be
        under this (benchmark/judge/timing.py decided_below). `check` False (with `time_it` False and no
        profile): build and export only, for a candidate whose own evaluation checked it already (the
        run's export of its best node); the result says `extra["checked"]` False and is not `correct`.
        `reuse_baseline`: the root's per-call samples (its extra["baseline_samples"]): this candidate is
        timed alone against them, no baseline built or run (issue 44; evaluator.reuse_baseline_s)."""
        kind = baseline or self.baseline.kind
        ecfg = self.cfg.model_dump(mode="json")
        ecfg["noise_floor"] = bool(ecfg.get("noise_floor") or noise_floor)
        if is_root and time_it and baselines.is_root_program(kind):
            ecfg["root_program"] = True  # a slow root is timed alone: its samples are the baseline's
            if ecfg["noise_floor"]:
                ecfg["noise_floor"] = "self"
        if reuse_baseline and time_it and not is_root:
            ecfg["reuse_baseline"] = [float(t) for t in reuse_baseline]
        if timing_budget_s is not None:
            ecfg["timing_budget_s"] = max(0.0, float(timing_budget_s))
        if decide_below is not None:
            ecfg["decide_below"] = float(decide_below)
        if not check and (time_it or profile):
            raise ValueError("check=False is for an export of a candidate judged before: no timing, no profile")
        job: dict[str, Any] = {
            "task_path": str(task.path), "task_id": task.id, "backend": self.backend,
            "candidate": candidate.model_dump(mode="json") if candidate is not None else None,
            "evaluator": ecfg, "baseline": kind if time_it else None,
            "time": time_it, "profile": profile, "export": export, "cache_dir": self.cache_dir,
            "threads": len(os.sched_getaffinity(0)), "device": self.device, "trials": self.baseline.trials,
        }
        if not check:
            job["check"] = False
        ext = extension_modules()
        if ext:  # levels registered at run time: the child registers them too, so it lowers alike
            job["levels"] = ext
        if time_it and kind == "tuned":
            d = baselines.ms_dir(task, self.backend, self.baseline.trials, self.cache_dir, self.device)
            if not baselines.is_tuned(d):
                return EvalResult(task=task.id, backend=self.backend, baseline=kind, error_kind="bad_input",
                                  # no tuned baseline: nothing of the candidate failed, and the caller can tell
                                  failure_class="other", extra={"no_tuned_baseline": True},
                                  error=f"no MetaSchedule database for {task.id} with {self.baseline.trials} trials: "
                                  f"run `leka bench baseline --task {task.id} --backend {self.backend} --trials "
                                  f"{self.baseline.trials}" + (f" --device {self.device['url']}`" if self.device else "`")
                                  + " or `leka bench eval --baseline tuned --trials N` with tuning allowed"), None
            job["ms_dir"] = str(d)
        return self._run_child(job, task)

    def _run_child(self, job: dict[str, Any], task: Task) -> tuple[EvalResult, dict | None]:
        self.n_evals += 1
        t0 = time.perf_counter()
        waited = 0.0
        try:
            res, prof = self.runner.submit(job).result()
            res.classified()  # the failure taxonomy (leka.core.failures) on every result that leaves the judge
            # waits for a measuring slot and, inside the child, for the CPU gate: other jobs' time
            waited = float(res.extra.get("slot_wait_s", 0.0)) + float(res.extra.get("gate_wait_s", 0.0))
            self.wait_s += waited
            return res, prof
        finally:
            self.device_s += time.perf_counter() - t0 - waited
