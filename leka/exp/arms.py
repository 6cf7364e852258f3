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

import importlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leka.exp.config import ExpConfig, Job

# name -> (recipe, LEKA run overrides, one-line description): the standard arms of the study
PRESETS: dict[str, tuple[str, list[str], str]] = {
    "leka": ("leka", [], "LEKA, all three levels, profile routing, tree search, deferred acceptance"),
    "l0_off": ("leka", ["run.layers=[L1,L2]"], "LEKA without the graph level"),
    "l1_off": ("leka", ["run.layers=[L0,L2]"], "LEKA without the schedule level"),
    "l2_off": ("leka", ["run.layers=[L0,L1]"], "LEKA without the target-source level"),
    "routing_random": ("leka", ["run.routing=random"], "levels chosen at random (seeded)"),
    "routing_round_robin": ("leka", ["run.routing=round_robin"], "levels in turn"),
    "routing_fixed_L1": ("leka", ["run.routing=fixed:L1"], "always the schedule level"),
    "greedy": ("leka", ["run.search=greedy"], "only the current best node is expanded"),
    "no_defer": ("leka", ["run.defer_followups=0"], "deferred acceptance off: a slower child is pruned at once"),
    "flat": ("flat", [], "one agent edits any level, no router (no layering)"),
    "oneshot": ("oneshot", [], "one LLM call writes the candidate"),
    "metaschedule": ("metaschedule", [], "MetaSchedule with the same wall clock; its best at the end"),
    "claude_code": ("claude_code", [], "a general coding agent with the same model and wall clock"),
}

# Where the Claude Code arm may live (issue 14 decides): the first importable one is used.
CLAUDE_CODE_MODULES = ("leka.arms.claude_code", "benchmark.claude_code")


@dataclass
class ArmContext:
    cfg: ExpConfig
    sets: list[str]  # the arm's LEKA overrides
    out: Path  # folder that will hold this attempt's run folder
    quiet: bool = True


@dataclass
class ArmOutcome:
    run_dir: Path
    candidate: Any = None  # leka.ir.Candidate or None (nothing correct / nothing produced)
    best_node: int | None = None
    evaluations: int = 0
    budget_used_s: float = 0.0
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    nodes_by_level: dict[str, int] = field(default_factory=dict)
    anytime: list[tuple[float, float]] = field(default_factory=list)  # (seconds, best speedup vs run baseline)
    run_baseline: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def leka_overrides(job: Job, ctx: ArmContext) -> list[str]:
    cfg = ctx.cfg
    sets = [f"backend={job.backend}", f"run.budget_s={job.budget_s}", f"run.seed={job.seed}",
            f"run.out={ctx.out}", f"baseline.kind={cfg.baseline.run_kind}", f"baseline.trials={cfg.baseline.tuned_trials}",
            f"baseline.cache_dir={cfg.baseline.cache_dir}"]
    if cfg.budget.max_evals is not None:
        sets.append(f"run.max_evals={cfg.budget.max_evals}")
    if cfg.model:
        sets.append(f"llm.model='{cfg.model}'")
    return sets + list(cfg.run_set) + list(ctx.sets)


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
    return ArmOutcome(run_dir=run_dir, candidate=cand, best_node=summary.get("best_node"),
                      evaluations=int(summary.get("evaluations") or 0),
                      budget_used_s=float(summary.get("budget_used_s") or 0.0),
                      llm_calls=int(llm.get("calls") or 0), input_tokens=int(llm.get("input_tokens") or 0),
                      output_tokens=int(llm.get("output_tokens") or 0),
                      nodes_by_level=dict(summary.get("nodes_by_level") or {}), anytime=anytime,
                      run_baseline=summary.get("baseline", ""))


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

    if not ctx.cfg.model:
        raise ValueError("the oneshot arm needs `model:` in the experiment config")
    sets = [s for s in leka_overrides(job, ctx) if not s.startswith(("backend=", "llm.model="))]
    t0 = time.monotonic()
    res = oneshot(job.task, ctx.cfg.model, backend=job.backend, out=str(ctx.out), overrides=sets, quiet=True)
    run_dir = Path(res.run_dir)
    cand_file = run_dir / "candidate.json"
    cand = ir.Candidate.model_validate_json(cand_file.read_text()) if cand_file.exists() else None
    return ArmOutcome(run_dir=run_dir, candidate=cand, evaluations=1 if cand else 0,
                      budget_used_s=round(time.monotonic() - t0, 2), llm_calls=res.calls,
                      input_tokens=res.input_tokens, output_tokens=res.output_tokens,
                      extra={"oneshot_error": res.error})


def arm_metaschedule(job: Job, ctx: ArmContext) -> ArmOutcome:
    from leka.exp.ms_arm import run_time_matched

    return run_time_matched(job, ctx)


def arm_claude_code(job: Job, ctx: ArmContext) -> ArmOutcome:
    from leka import ir

    fn = None
    for name in CLAUDE_CODE_MODULES:
        try:
            fn = importlib.import_module(name).run_claude_code
            break
        except (ImportError, AttributeError):
            continue
    if fn is None:
        raise RuntimeError(f"the claude_code arm is not installed (none of {', '.join(CLAUDE_CODE_MODULES)} "
                           "defines run_claude_code)")
    t0 = time.monotonic()
    out = fn(job.task, job.backend, job.budget_s, ctx.cfg.model, ctx.out)
    d = out if isinstance(out, dict) else getattr(out, "__dict__", {})
    run_dir = Path(d.get("run_dir") or ctx.out)
    cand = d.get("candidate")
    if isinstance(cand, (str, Path)):
        cand = ir.Candidate.model_validate_json(Path(cand).read_text())
    return ArmOutcome(run_dir=run_dir, candidate=cand, budget_used_s=round(time.monotonic() - t0, 2),
                      llm_calls=int(d.get("calls") or 0), input_tokens=int(d.get("input_tokens") or 0),
                      output_tokens=int(d.get("output_tokens") or 0), evaluations=int(d.get("evaluations") or 0))


ARMS: dict[str, Callable[[Job, ArmContext], ArmOutcome]] = {
    "leka": arm_leka,
    "flat": arm_flat,
    "oneshot": arm_oneshot,
    "metaschedule": arm_metaschedule,
    "claude_code": arm_claude_code,
}


def describe() -> str:
    """The preset table, for `leka exp arms` and the README."""
    return "\n".join(f"{k:20s} {r:13s} {' '.join(s) or '-':32s} {d}" for k, (r, s, d) in PRESETS.items())


def write_outcome(o: ArmOutcome, path: Path) -> None:
    d = {k: v for k, v in o.__dict__.items() if k != "candidate"}
    d["run_dir"] = str(o.run_dir)
    path.write_text(json.dumps(d, indent=1, default=str))
