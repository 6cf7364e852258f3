"""Evaluator cost and fidelity over the llvm subset (or given tasks).

For each task the default candidate (untuned lowering) is evaluated against itself (A vs A): it must
come out correct, and its speedup should lie in [0.97, 1.03]. Prints the median seconds per candidate
by level and phase (build / check / timing, plus the child's whole wall time) and the A-vs-A fidelity.

    python -m experiments.bench_evaluator [--subset subset69] [--tasks a,b] [--json OUT] [--passes 2]
        [--cache-dir DIR]

With --passes 2 each task is evaluated twice in a row: the first pass compiles the kernels (the
kernel cache in --cache-dir starts as it is: give an empty folder for a cold first pass), the second
finds them, as every candidate after a run's first does for its unchanged kernels. Times are the
evaluation's wall clock as the caller sees it (the child process, fork to result) and its phases.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

from benchmark.judge import Evaluator
from benchmark.subsets import load_subset
from benchmark.task import resolve
from leka.core.config import EvaluatorConfig

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subset", default="subset69")
    ap.add_argument("--tasks", default="", help="comma list of ids instead of the subset")
    ap.add_argument("--json", default=str(ROOT / "experiments" / "out" / "bench_evaluator.json"))
    ap.add_argument("--lo", type=float, default=0.97)
    ap.add_argument("--hi", type=float, default=1.03)
    ap.add_argument("--passes", type=int, default=1, help="evaluations per task in a row (2: cold, then warm)")
    ap.add_argument("--cache-dir", default=None, help="kernel / baseline / root cache (default .leka-cache)")
    ap.add_argument("--set", action="append", default=[], help="evaluator field=value (repeatable), e.g. "
                    "kernel_cache=false ci_width=0 (no kernel cache, no early stop on the interval)")
    args = ap.parse_args()
    ids = [t for t in args.tasks.split(",") if t] or load_subset(args.subset, "llvm")
    import yaml

    sets = {k: yaml.safe_load(v) for k, v in (kv.split("=", 1) for kv in args.set)}
    ev = Evaluator(EvaluatorConfig(**sets), cache_dir=args.cache_dir)
    if sets:
        print(f"evaluator settings: {sets}")
    print(f"machine: {platform.node()}, {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    all_rows: list[list[dict]] = [[] for _ in range(args.passes)]
    t_all = time.time()
    for i, tid in enumerate(ids, 1):
        task = resolve(tid)
        for k in range(args.passes):
            r = ev.evaluate(task)
            all_rows[k].append(_row(task, r))
            x = all_rows[k][-1]
            print(f"[{i}/{len(ids)}] pass {k + 1} {task.id:36s} L{task.level} correct={r.correct} "
                  f"A/A={r.speedup or 0:.3f} spread={r.timing_spread or 0:.3f} pairs={r.n_pairs} "
                  f"build={r.build_s or 0:.2f}s check={r.check_s or 0:.2f}s timing={r.timing_s or 0:.2f}s "
                  f"eval={r.wall_s or 0:.2f}s kernels={x['kernels']}", flush=True)
    for k, rows in enumerate(all_rows):
        print(f"\npass {k + 1}")
        _summary(rows, args.lo, args.hi)
    print(f"total {time.time() - t_all:.0f}s")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(all_rows if args.passes > 1 else all_rows[0], indent=1))


def _row(task, r) -> dict:
    per_cand = sum(x or 0.0 for x in (r.build_s, r.check_s, r.timing_s))
    return {"task": task.id, "level": task.level, "correct": r.correct, "error_kind": r.error_kind,
            "speedup": r.speedup, "lo": r.speedup_lo, "hi": r.speedup_hi, "loaded": r.loaded,
            "spread": r.timing_spread, "valid": r.timing_valid, "pairs": r.n_pairs,
            "build_s": r.build_s, "check_s": r.check_s, "timing_s": r.timing_s,
            "candidate_s": per_cand, "wall_s": r.wall_s, "kernels": r.extra.get("kernels"),
            "phase_s": r.extra.get("phase_s")}


def _summary(rows: list[dict], lo: float, hi: float) -> None:
    print(f"{'level':>5} {'n':>3} {'build s':>8} {'check s':>8} {'timing s':>9} {'cand. s':>8} {'eval s':>7}"
          "   (medians per evaluation)")
    for lv in sorted({r["level"] for r in rows}):
        rs = [r for r in rows if r["level"] == lv]

        def med(k: str, rs=rs) -> float:
            return statistics.median(r[k] or 0.0 for r in rs)

        print(f"{lv:>5} {len(rs):>3} {med('build_s'):8.2f} {med('check_s'):8.2f} {med('timing_s'):9.2f} "
              f"{med('candidate_s'):8.2f} {med('wall_s'):7.2f}")
    ok = [r for r in rows if r["speedup"] is not None and lo <= r["speedup"] <= hi]
    correct = sum(r["correct"] for r in rows)
    print(f"correct: {correct}/{len(rows)}   A-vs-A within [{lo}, {hi}]: {len(ok)}/{len(rows)} = "
          f"{100 * len(ok) / len(rows):.1f}%")


if __name__ == "__main__":
    main()
