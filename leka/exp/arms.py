"""The arms of an experiment: named recipes, each producing one run folder and one final candidate,
which `leka.exp.judge` then measures with the same evaluator for every arm.

| recipe | what runs |
|---|---|
| `leka` | `leka run` (policy rules or llm); its ablations are the same recipe with `set:` overrides (PRESETS) |
| `flat` | one agent that may edit any level and no router (`leka.exp.flat`): the no-layering ablation |
| `oneshot` | `leka oneshot`: one call to the same model, evaluated once |
| `metaschedule` | MetaSchedule given the job's wall clock, in rounds; its best when the budget ends |
| `claude_code` | the general coding agent (issue 14): `run_claude_code(...)`, imported lazily |

An arm function takes (job, ArmContext) and returns an ArmOutcome. It never measures the final
candidate itself: the judge does, against the tables' baselines.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from leka.exp.config import Job
from leka.exp.presets import ARMS, PRESETS, RECIPES
from leka.exp.records import ArmContext, ArmOutcome


def leka_overrides(job: Job, ctx: ArmContext) -> list[str]:
    cfg = ctx.cfg
    sets = [f"backend={job.backend}", f"run.budget_s={job.budget_s}", f"run.seed={job.seed}",
            f"run.out={ctx.out}", f"baseline.kind={cfg.baseline.run_kind}", f"baseline.trials={cfg.baseline.tuned_trials}",
            f"baseline.cache_dir={cfg.baseline.cache_dir}"]
    if cfg.budget.max_evals is not None:
        sets.append(f"run.max_evals={cfg.budget.max_evals}")
    model = model_of(job, cfg)
    if model:
        sets.append(f"llm.model='{model}'")
    return sets + cfg.evaluator_sets(job.backend) + list(cfg.run_set) + list(ctx.sets)


def model_of(job: Job, cfg) -> str:
    """The job's LLM spec: its arm's `model`, else the grid's."""
    spec = next((a for a in cfg.arms if a.name == job.arm), None)
    return (spec.model if spec is not None and spec.model else "") or cfg.model


def _tree_outcome(summary: dict[str, Any]) -> ArmOutcome:
    from candidate_tree import Tree
    from leka import ir

    run_dir = Path(summary["run_dir"])
    tree = Tree(run_dir, create=False, mirror=False)
    try:
        nodes = tree.nodes()
        cand = None
        if summary.get("best_node") is not None and summary.get("best_correct"):
            cand = ir.Candidate.model_validate_json(tree.artifact(summary["best_node"], "candidate.json"))
        anytime = anytime_from_nodes(nodes)
    finally:
        tree.close()
    llm = summary.get("llm") or {}
    extra = {} if cand is not None else failures_of(nodes)
    return ArmOutcome(run_dir=run_dir, candidate=cand, best_node=summary.get("best_node"),
                      evaluations=int(summary.get("evaluations") or 0),
                      budget_used_s=float(summary.get("budget_used_s") or 0.0),
                      llm_calls=int(llm.get("calls") or 0), input_tokens=int(llm.get("input_tokens") or 0),
                      output_tokens=int(llm.get("output_tokens") or 0), cost_usd=ledger_cost(llm),
                      nodes_by_level=dict(summary.get("nodes_by_level") or {}), anytime=anytime,
                      run_baseline=summary.get("baseline", ""), extra=extra)


def failures_of(nodes) -> dict[str, Any]:
    """Why a search ended with nothing correct: its failed evaluations by class (leka.core.failures), the
    most frequent naming the row's class (ties: the taxonomy's order)."""
    from collections import Counter

    from leka.core.failures import FAILURE_CLASSES, classify

    c = Counter(classify(n.result.error_kind, n.result.error, n.result.correct) for n in nodes
                if n.result is not None and not n.result.correct)
    c.pop(None, None)
    if not c:
        return {}
    top = max(c, key=lambda k: (c[k], -FAILURE_CLASSES.index(k)))
    what = ", ".join(f"{k} {n}" for k, n in c.most_common())
    return {"failure_class": top, "error": f"the arm produced no correct candidate (failed evaluations: {what})"}


def ledger_cost(llm: dict[str, Any]) -> float | None:
    """A ledger's dollars (Ledger.to_dict), None when every answered call was of an unpriced model."""
    answered = int(llm.get("calls") or 0) - int(llm.get("failed_calls") or 0)
    if answered > 0 and int(llm.get("unpriced_calls") or 0) >= answered:
        return None
    return float(llm.get("cost_usd") or 0.0)


def anytime_from_nodes(nodes) -> list[tuple[float, float]]:
    """Best validly timed correct speedup so far, against the time each node's evaluation ended
    (the tree's `updated` stamp), from the root's creation."""
    if not nodes:
        return []
    t0 = min(n.created for n in nodes)
    pts, best = [], 0.0
    for n in sorted(nodes, key=lambda n: n.updated):
        r = n.result
        if r is not None and r.measured and (r.speedup or 0.0) > best:
            best = float(r.speedup)
            pts.append((round(n.updated - t0, 3), best))
    return pts


def arm_leka(job: Job, ctx: ArmContext) -> ArmOutcome:
    from leka.run import run

    return _tree_outcome(run(job.task, overrides=leka_overrides(job, ctx), quiet=ctx.quiet, live=False))


def arm_flat(job: Job, ctx: ArmContext) -> ArmOutcome:
    from leka.exp.flat import flat_agents
    from leka.run import run

    s = run(job.task, overrides=leka_overrides(job, ctx), quiet=ctx.quiet, live=False, agents_factory=flat_agents)
    return _tree_outcome(s)


def arm_oneshot(job: Job, ctx: ArmContext) -> ArmOutcome:
    from leka import ir
    from leka.oneshot import oneshot

    model = model_of(job, ctx.cfg)
    if not model:
        raise ValueError("the oneshot arm needs `model:` in the experiment config (or in its arm)")
    sets = [s for s in leka_overrides(job, ctx) if not s.startswith(("backend=", "llm.model="))]
    t0 = time.monotonic()
    # the judge evaluates the candidate (against the tables' references): the arm only generates it
    res = oneshot(job.task, model, backend=job.backend, out=str(ctx.out), overrides=sets, quiet=True, evaluate=False)
    run_dir = Path(res.run_dir)
    cand_file = run_dir / "candidate.json"
    cand = ir.Candidate.model_validate_json(cand_file.read_text()) if cand_file.exists() else None
    # without a candidate (no reply, no edits, an edit that does not apply) the row says why, classified
    extra = {"oneshot_error": res.error, "error": res.error, "error_kind": res.error_kind,
             "failure_class": res.failure_class}
    return ArmOutcome(run_dir=run_dir, candidate=cand, evaluations=1 if cand else 0,
                      budget_used_s=round(time.monotonic() - t0, 2), llm_calls=res.calls,
                      input_tokens=res.input_tokens, output_tokens=res.output_tokens,
                      cost_usd=ledger_cost(res.ledger), extra=extra)


def arm_metaschedule(job: Job, ctx: ArmContext) -> ArmOutcome:
    from leka.exp.ms_arm import run_time_matched

    return run_time_matched(job, ctx)


def arm_claude_code(job: Job, ctx: ArmContext) -> ArmOutcome:
    """The general coding agent (issue 14): the pinned Claude Code CLI with the job's model and wall clock;
    its best measured candidate (re-evaluated by its harness) is judged here like every arm's."""
    from leka import ir
    from leka.arms.claude_code import run_claude_code

    t0 = time.monotonic()
    # the grid's evaluator and baseline settings judge its ./measure too (same evaluator as every arm);
    # (run_claude_code sets the backend and seed itself and reads the model spec, compat:URL|NAME too)
    sets = [s for s in leka_overrides(job, ctx) if not s.startswith(("backend=", "run.seed="))]
    res = run_claude_code(job.task, backend=job.backend, budget_s=job.budget_s, model=model_of(job, ctx.cfg),
                          out_dir=ctx.out, overrides=sets, seed=job.seed, quiet=ctx.quiet)
    run_dir = Path(res.run_dir)
    f = run_dir / "candidate.json"
    cand = ir.Candidate.model_validate_json(f.read_text()) if f.is_file() else None
    if cand is None and res.status != "ok":
        raise RuntimeError(f"claude_code: {res.error}")
    return ArmOutcome(run_dir=run_dir, candidate=cand, budget_used_s=round(time.monotonic() - t0, 2),
                      llm_calls=res.turns, input_tokens=res.input_tokens, output_tokens=res.output_tokens,
                      cost_usd=res.cost_usd, evaluations=res.evals, extra={"status": res.status, "error": res.error})


ARMS.update({
    "leka": arm_leka,
    "flat": arm_flat,
    "oneshot": arm_oneshot,
    "metaschedule": arm_metaschedule,
    "claude_code": arm_claude_code,
})
assert set(ARMS) == set(RECIPES), "every recipe of leka.exp.presets has an arm function"


def describe() -> str:
    """The preset table, for `leka exp arms` and the README."""
    return "\n".join(f"{k:20s} {r:13s} {' '.join(s) or '-':32s} {d}" for k, (r, s, d) in PRESETS.items())


def write_outcome(o: ArmOutcome, path: Path) -> None:
    d = {k: v for k, v in o.__dict__.items() if k != "candidate"}
    d["run_dir"] = str(o.run_dir)
    path.write_text(json.dumps(d, indent=1, default=str))
