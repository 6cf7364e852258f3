"""One job, end to end, as a worker runs it: the arm makes its run folder and its final candidate,
then the same evaluator judges that candidate for every arm: against MetaSchedule-tuned TVM at the
configured trial count (the tables' reference) and against PyTorch eager. The row is written as
`job_result.json` into the attempt folder before it is returned, so a driver killed meanwhile finds
it on resume instead of running the job again."""

from __future__ import annotations

import json
import time
import traceback
from pathlib import Path
from typing import Any

from leka.exp.arms import ARMS, ArmContext, ArmOutcome, write_outcome
from leka.exp.config import ExpConfig, Job

RESULT_FILE = "job_result.json"


def attempt_dir(exp_dir: Path, job: Job, attempt: int) -> Path:
    return exp_dir / "runs" / job.backend / job.task_label / job.arm / f"s{job.seed}" / f"a{attempt}"


def _judge(job: Job, cfg: ExpConfig, outcome: ArmOutcome) -> dict[str, Any]:
    from benchmark.judge import Evaluator
    from benchmark.task import resolve
    from leka.core.config import load_config
    from leka.core.failures import classify
    from profilers.roof import sol_score, task_roof

    row: dict[str, Any] = {"compiled": False, "correct": False}
    task = resolve(job.task)
    # whether the tables' tuned reference exists for this instance, known for every row (a failed one
    # too): the one-shot table counts instances without one apart instead of as losses
    row["tuned_baseline"] = _has_tuned(task, job.backend, cfg)
    engines = engine_support(task, job.backend, cfg)
    if engines:
        row["engines"] = engines
    if outcome.candidate is None:
        ex = outcome.extra or {}
        row["error_kind"] = ex.get("error_kind") or "no_candidate"
        row["error"] = ex.get("error") or "the arm produced no correct candidate"
        row["failure_class"] = ex.get("failure_class") or classify(row["error_kind"], row["error"])
        return row
    kind = "tuned" if cfg.baseline.tuned_trials else "untuned"  # 0 trials: untuned TVM is the reference
    lcfg = load_config([], [f"baseline.kind={kind}", f"baseline.trials={cfg.baseline.tuned_trials or 1}",
                            f"baseline.cache_dir={cfg.baseline.cache_dir}", *cfg.evaluator_sets(job.backend), *cfg.run_set])
    ev = Evaluator(lcfg.evaluator, job.backend, lcfg.baseline)
    # the profile gives the roof; the noise floor (the reference against itself) is stated in the report
    r, prof = ev.evaluate_full(task, outcome.candidate, profile=True, noise_floor=True)
    if r.extra.get("no_tuned_baseline"):  # baseline.prepare: skip: judged for Compile@1 / Correct@1 only
        r, prof = ev.evaluate_full(task, outcome.candidate, time_it=False, profile=True)
    row.update(reference=r.baseline, compiled=r.compiled, correct=r.correct, speedup_ref=r.speedup, timing_valid_ref=r.timing_valid,
               # the speedup's interval (benchmark/judge/stats.py) and the machine's load during its timing
               speedup_ref_lo=r.speedup_lo, speedup_ref_hi=r.speedup_hi, loaded_ref=r.loaded,
               machine_load_ref=r.extra.get("machine_load"), noise_floor_ref=r.extra.get("noise_floor"),
               timer_ref=r.extra.get("timer"), threads_ref=r.extra.get("sandbox_threads"),
               t_candidate_s=r.t_candidate_s, t_ref_s=r.t_baseline_s, peak_memory_bytes=r.peak_memory_bytes,
               # issue 43: the platform of the timing, the physical floor, the reasons to audit the number
               platform_ref=r.extra.get("platform"), floor_ref=r.extra.get("floor"), audit_ref=r.extra.get("audit"),
               error_kind=r.error_kind, error=(r.error or None) and r.error[:2000], failure_class=r.failure_class)
    tr = task_roof(prof, measured_s=r.t_candidate_s, baseline_s=r.t_baseline_s) if r.correct else None
    if tr is not None:  # the measured roof (profilers/roof.py): SOL time, fraction, SOL score vs the reference
        row.update(roof_s=tr.roof_s, roof_fraction=tr.fraction, sol_ref=tr.sol, roof_bound=tr.bound,
                   roof_key=tr.peaks_key)
    if cfg.baseline.torch and r.correct:
        rt = ev.evaluate(task, outcome.candidate, baseline="torch")
        row.update(speedup_torch=rt.speedup, timing_valid_torch=rt.timing_valid, t_torch_s=rt.t_baseline_s,
                   speedup_torch_lo=rt.speedup_lo, speedup_torch_hi=rt.speedup_hi, loaded_torch=rt.loaded,
                   machine_load_torch=rt.extra.get("machine_load"), timer_torch=rt.extra.get("timer"),
                   platform_torch=rt.extra.get("platform"), audit_torch=rt.extra.get("audit"))
        if tr is not None and rt.t_candidate_s and rt.t_baseline_s:
            row["sol_torch"] = sol_score(rt.t_candidate_s, rt.t_baseline_s, tr.roof_s)
    for k, e in engines.items():  # the production engines the backend takes (baseline.engines)
        if r.correct and e.get("supported"):
            re_ = ev.evaluate(task, outcome.candidate, baseline=k)
            e.update(speedup=re_.speedup, lo=re_.speedup_lo, hi=re_.speedup_hi, timing_valid=re_.timing_valid,
                     loaded=re_.loaded, label=re_.extra.get("baseline_name") or e.get("label"),
                     error_kind=re_.error_kind, error=(re_.error or None) and re_.error[:300])
            if re_.error_kind == "baseline_unsupported":
                e["supported"] = False
    return row


def _has_tuned(task, backend: str, cfg: ExpConfig) -> bool | None:
    """None: the reference is untuned TVM (0 trials); else whether the tuned database is cached."""
    from benchmark import baselines

    if not cfg.baseline.tuned_trials:
        return None
    return baselines.is_tuned(baselines.ms_dir(task, backend, cfg.baseline.tuned_trials, cfg.baseline.cache_dir))


def engine_support(task, backend: str, cfg: ExpConfig) -> dict[str, dict[str, Any]]:
    """{engine kind: {"supported", "label", "reason"}} for the production engines the grid compares with
    on this backend (`baseline.engines`), whether or not the candidate is correct: an engine that cannot
    take the task (its export or conversion refused, not installed) leaves the instance out of that
    engine's Fast@1 instead of counting it as a loss. The conversions are cached (benchmark/engines.py)."""
    import fcntl

    from benchmark import baselines
    from benchmark import engines as E

    out: dict[str, dict[str, Any]] = {}
    for k in cfg.baseline.engine_kinds(backend):
        e: dict[str, Any] = {"label": baselines.label(k, backend)}
        d = E.engine_dir(task, cfg.baseline.cache_dir)
        d.mkdir(parents=True, exist_ok=True)
        try:
            # one preparer per task at a time: two jobs of one instance (two models, two backends) exporting
            # and verifying at once raced on the cache's files, and the loser read as "unsupported"
            with open(d / ".prepare.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                E.prepare(k, task, device=baselines.engine_device(k, backend), cache_dir=cfg.baseline.cache_dir)
            e["supported"] = True
        except E.BaselineUnsupported as ex:
            e.update(supported=False, reason=str(ex)[:300])
        except Exception as ex:  # noqa: BLE001 - an engine that fails on the task is an unsupported one
            e.update(supported=False, reason=f"{type(ex).__name__}: {str(ex)[:300]}")
        out[k] = e
    return out


def execute(job: Job, cfg: ExpConfig, exp_dir: Path, attempt: int) -> dict[str, Any]:
    """Never raises: a failure is a row with its error."""
    t0 = time.time()
    adir = attempt_dir(exp_dir, job, attempt)
    adir.mkdir(parents=True, exist_ok=True)
    spec = next(a for a in cfg.arms if a.name == job.arm)
    row: dict[str, Any] = {**job.model_dump(), "attempt": attempt, "attempt_dir": str(adir.relative_to(exp_dir)),
                           "started": t0}
    try:
        outcome = ARMS[job.recipe](job, ArmContext(cfg=cfg, sets=list(spec.set), out=adir))
        write_outcome(outcome, adir / "arm_outcome.json")
        row.update(run_dir=str(Path(outcome.run_dir).resolve().relative_to(exp_dir.resolve())),
                   best_node=outcome.best_node, evaluations=outcome.evaluations,
                   budget_used_s=outcome.budget_used_s, llm_calls=outcome.llm_calls,
                   input_tokens=outcome.input_tokens, output_tokens=outcome.output_tokens,
                   cost_usd=outcome.cost_usd, nodes_by_level=outcome.nodes_by_level, anytime=outcome.anytime,
                   run_baseline=outcome.run_baseline, arm_extra=outcome.extra)
        row.update(_judge(job, cfg, outcome))
    except BaseException as e:  # noqa: BLE001 - any failure of one job is that job's row
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise  # the worker is being stopped (driver killed, Ray shut down): no result, the job runs again
        msg = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
        row.update(compiled=row.get("compiled", False), correct=row.get("correct", False),
                   error_kind=row.get("error_kind") or "job_failed", error=f"{type(e).__name__}: {msg}",
                   traceback=traceback.format_exc()[-4000:])
    row["wall_s"] = round(time.time() - t0, 2)
    row["ended"] = time.time()
    tmp = adir / (RESULT_FILE + ".tmp")
    tmp.write_text(json.dumps(row, indent=1, default=str))
    tmp.replace(adir / RESULT_FILE)
    return row


def read_result(exp_dir: Path, job: Job, attempt: int) -> dict[str, Any] | None:
    p = attempt_dir(exp_dir, job, attempt) / RESULT_FILE
    if not p.is_file():
        return None
    try:
        return json.loads(p.read_text())
    except (OSError, json.JSONDecodeError):
        return None
