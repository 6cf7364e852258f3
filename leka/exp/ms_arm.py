"""The time-matched MetaSchedule arm: MetaSchedule tunes the task for the job's wall clock, in rounds
of `metaschedule.round_trials` trials on one JSON database (each round continues the last); after
every round the database's best schedules become an ordinary candidate (one L1 `tir_text` entry per
tuned PrimFunc) and are evaluated against the run baseline, which gives the anytime curve. The arm's
answer is the last round that ended inside the budget. Evaluation time is not charged to the clock
(MetaSchedule measures its own trials; our evaluations are only there to judge it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from leka.exp.config import Job
from leka.exp.records import ArmContext, ArmOutcome


def tuned_candidate(task, backend: str, root, work_dir: str):
    """The root candidate plus the tuned PrimFuncs of a MetaSchedule database, as L1 entries."""
    from leka import ir
    from leka import tvm_adapter as A

    cand = ir.root_candidate(task, backend, root)
    target = A.make_target(backend)
    layers = ir.lower_layers(cand, target, root.params)
    tuned = A.prim_funcs(A.apply_tuning_db(layers.unscheduled, target, work_dir))
    l1 = {}
    for name, key in layers.l1_keys.items():
        f = tuned.get(name)
        if f is None or A.structural_hash(f) == key:
            continue  # no record for this PrimFunc: it stays as the default lowering made it
        l1[key] = ir.L1Entry(func=name, tir_text=f.script())
    return cand.model_copy(update={"l1": l1})


def _tune_round(task_path: str, backend: str, cache_dir: str, work: Path, trials: int, seed: int) -> None:
    """One tuning round, and its database's best as a candidate (work/tuned_candidate.json), in a fresh
    Python process. Its first step is slow on a busy machine: importing TVM's tensor intrinsics parses
    hundreds of TVMScript functions, each walking `inspect.stack()` over every loaded module (seen with
    py-spy), and a Ray worker has more modules loaded (an attempt inside one had not finished it after
    15 minutes here; not measured side by side). A process also keeps MetaSchedule's worker pools and
    any crash out of the job's worker."""
    args = json.dumps([task_path, backend, cache_dir, str(work), trials, seed])
    r = subprocess.run([sys.executable, "-m", "leka.exp.ms_arm", args], capture_output=True, text=True)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"MetaSchedule round failed (exit {r.returncode}): {' | '.join(tail)}")


def _tune_main(args: str) -> None:
    from benchmark.roots import load_root
    from benchmark.task import resolve
    from leka import ir
    from leka import tvm_adapter as A

    task_path, backend, cache_dir, work, trials, seed = json.loads(args)
    task = resolve(task_path)
    root = load_root(task, cache_dir)
    target = A.make_target(backend)
    # unscheduled: MetaSchedule skips PrimFuncs DLight already scheduled (GPU targets)
    lowered = A.lower(ir.relax_module(ir.root_candidate(task, backend, root), root.params), target,
                      gpu_schedule=False)
    A.tune_relax(lowered, target, work, trials, seed=seed)
    cand = tuned_candidate(task, backend, root, work)
    (Path(work) / "tuned_candidate.json").write_text(cand.model_dump_json())


def _held_round(n_slots: int, backend: str, task_path: str, cache_dir: str, work: Path, trials: int,
                seed: int) -> float:
    """One tuning round's seconds. MetaSchedule measures its trials on the cores: a round holds a
    measuring slot like an evaluation, and the cores alone (the CPU gate: its builds and trials are its
    measurements); the waits for them are not charged to the arm's clock."""
    from benchmark.judge import acquire_slot, cpu_gate

    with acquire_slot(n_slots, backend), cpu_gate(backend, True, n_slots > 0):
        t0 = time.monotonic()
        _tune_round(task_path, backend, cache_dir, work, trials, seed)
        return time.monotonic() - t0


def run_time_matched(job: Job, ctx: ArmContext) -> ArmOutcome:
    from benchmark.judge import Evaluator
    from benchmark.task import resolve
    from leka.core.config import load_config
    from leka.report import baseline_label
    from leka.run import new_run_dir

    cfg = ctx.cfg
    task = resolve(job.task)
    lcfg = load_config([], [f"backend={job.backend}", f"baseline.kind={cfg.baseline.run_kind}",
                            f"baseline.trials={cfg.baseline.tuned_trials}",
                            f"baseline.cache_dir={cfg.baseline.cache_dir}", *cfg.evaluator_sets(job.backend),
                            *cfg.run_set])
    ctx.out.mkdir(parents=True, exist_ok=True)
    run_dir = new_run_dir(ctx.out, f"ms-{task.id}", job.seed)
    work = run_dir / "ms_db"
    work.mkdir()
    ev = Evaluator(lcfg.evaluator, job.backend, lcfg.baseline)
    rounds, best, best_cand, clock, trials = [], 0.0, None, 0.0, 0
    max_rounds = cfg.budget.max_evals or 10_000
    n_slots = cfg.slots_for(job.backend)
    while clock < job.budget_s and len(rounds) < max_rounds:
        clock += _held_round(n_slots, job.backend, str(task.path), cfg.baseline.cache_dir, work,
                             cfg.metaschedule.round_trials, job.seed + len(rounds))
        trials += cfg.metaschedule.round_trials
        if clock > job.budget_s and rounds:
            break  # this round ended after the budget: MetaSchedule's answer is the previous one
        from leka import ir

        cand = ir.Candidate.model_validate_json((work / "tuned_candidate.json").read_text())
        res = ev.evaluate(task, cand)
        rounds.append({"clock_s": round(clock, 2), "trials": trials, "speedup": res.speedup,
                       "correct": res.correct, "timing_valid": res.timing_valid, "error": res.error_kind})
        if res.measured and (res.speedup or 0.0) > best:
            best, best_cand = float(res.speedup), cand
        elif best_cand is None and res.correct:
            best_cand = cand
    (run_dir / "ms_rounds.json").write_text(json.dumps(rounds, indent=1))
    if best_cand is not None:
        (run_dir / "candidate.json").write_text(best_cand.model_dump_json(indent=1))
    anytime, top = [], 0.0
    for r in rounds:
        if r["correct"] and r["timing_valid"] and (r["speedup"] or 0.0) > top:
            top = r["speedup"]
            anytime.append((r["clock_s"], top))
    return ArmOutcome(run_dir=run_dir, candidate=best_cand, evaluations=len(rounds),
                      budget_used_s=round(clock, 2), anytime=anytime,
                      run_baseline=baseline_label(lcfg.baseline.kind, lcfg.baseline.trials, lcfg.backend),
                      extra={"ms_trials": trials, "ms_rounds": len(rounds),
                             # a first round longer than the budget is kept (else there is no answer), and said
                             "first_round_over_budget": bool(rounds and rounds[0]["clock_s"] > job.budget_s)})


if __name__ == "__main__":
    _tune_main(sys.argv[1])
