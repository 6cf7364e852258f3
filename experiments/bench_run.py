"""End-to-end LEKA runs on the llvm subset's Level-2 and Level-3 tasks (rule policy by default).

Per task: best speedup vs untuned TVM (the run's own measurements) and vs MetaSchedule-tuned TVM (the
best candidate re-evaluated against the cached tuned baseline), nodes per level, the route reasons
that led to the best candidate. Ends with the geometric means.

    python -m experiments.bench_run [--budget 5m] [--levels 2,3] [--tuned-trials 16]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchmark import baselines
from benchmark.judge import Evaluator, geomean
from benchmark.subsets import load_subset
from benchmark.task import resolve
from candidate_tree import Tree
from leka import ir
from leka.core.config import BaselineConfig, EvaluatorConfig
from leka.run import parse_duration, run

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subset", default="subset69")
    ap.add_argument("--levels", default="2,3")
    ap.add_argument("--tasks", default="", help="comma list of ids instead of the subset")
    ap.add_argument("--budget", default="5m")
    ap.add_argument("--policy", default="rules")
    ap.add_argument("--tuned-trials", type=int, default=16, help="0 skips the tuned column")
    ap.add_argument("--out", default=str(ROOT / "experiments" / "out" / "bench_run"))
    args = ap.parse_args()
    levels = {int(x) for x in args.levels.split(",")}
    ids = [t for t in args.tasks.split(",") if t] or [
        t for t in load_subset(args.subset, "llvm") if resolve(t).level in levels]
    budget = parse_duration(args.budget)
    rows = []
    for i, tid in enumerate(ids, 1):
        task = resolve(tid)
        print(f"[{i}/{len(ids)}] {task.id} (level {task.level}), budget {budget:.0f}s ...", flush=True)
        s = run(task.id, overrides=[f"run.budget_s={budget}", f"run.policy={args.policy}", f"run.out={args.out}"],
                quiet=True)
        row = {"task": task.id, "level": task.level, "best_node": s["best_node"],
               "vs_untuned": s["best_speedup_vs_untuned"], "correct": s["best_correct"],
               "valid": s.get("best_timing_valid"), "nodes": s["nodes_by_level"], "evals": s["evaluations"],
               "run_dir": s["run_dir"], "vs_tuned": None}
        tree = Tree(s["run_dir"], create=False)
        if s["best_node"] is not None:
            lineage = tree.lineage(s["best_node"])
            row["route"] = [f"{n.level}: {n.route_reason[:70]}" for n in lineage if n.level]
        if args.tuned_trials and s["best_node"] is not None:
            d, _ = baselines.ensure_tuned(task, "llvm", args.tuned_trials)
            cand = ir.Candidate.model_validate_json(tree.artifact(s["best_node"], "candidate.json"))
            ev = Evaluator(EvaluatorConfig(), "llvm", BaselineConfig(kind="tuned", trials=args.tuned_trials))
            r = ev.evaluate(task, cand)
            row["vs_tuned"] = r.speedup if r.correct else None
        tree.close()
        rows.append(row)
        print(f"    best {row['vs_untuned'] or 0:.2f}x vs untuned, {row['vs_tuned'] or 0:.2f}x vs tuned "
              f"({args.tuned_trials} trials), nodes {row['nodes']}, correct {row['correct']}", flush=True)
    print()
    print(f"{'task':34s} {'lvl':>3} {'vs untuned':>10} {'vs tuned':>9} {'L0':>3} {'L1':>3} {'L2':>3} {'evals':>5} correct")
    for r in rows:
        n = r["nodes"]
        print(f"{r['task']:34s} {r['level']:>3} {r['vs_untuned'] or 0:10.2f} {r['vs_tuned'] or 0:9.2f} "
              f"{n['L0']:>3} {n['L1']:>3} {n['L2']:>3} {r['evals']:>5} {r['correct']}")
    for r in rows:
        print(f"  {r['task']}: " + " | ".join(r.get("route", [])[:4]))
    gu, gt = geomean([r["vs_untuned"] for r in rows]), geomean([r["vs_tuned"] for r in rows])
    all3 = sum(1 for r in rows if all(r["nodes"][lv] > 0 for lv in ("L0", "L1", "L2")))
    print(f"\ngeomean vs untuned: {gu or 0:.2f}x   vs tuned: {gt or 0:.2f}x   all correct: "
          f"{all(r['correct'] for r in rows)}   trees with all three levels: {all3}/{len(rows)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"bench_run-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
