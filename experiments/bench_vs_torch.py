"""Issue 19's table: LEKA's answer on the llvm subset against PyTorch eager, MetaSchedule-64 and
untuned TVM, and for 8 tasks (stratified by level) against MetaSchedule-256.

1. The grid `experiments/configs/cpu_vs_torch.yaml` (or --config): 23 tasks x 5 minutes, one job at a
   time, each answer judged by the evaluator against MetaSchedule-64 and PyTorch eager (`leka exp
   run`; resumable: run this script again with the same --out and finished jobs are kept).
2. MetaSchedule-256: tuned once per chosen task (cached in .leka-cache/), then each chosen task's
   answer is evaluated against it (interleaved pairs, the evaluator as for every other column).
   Resumable too (EXP_DIR/ms256.json).
3. The table, with a note for every task still behind torch: its dominant kernel in the answer's
   profile (share of time, kind, compute- or memory-bound, fraction of its roofline).

    PYTHONPATH=$PWD .venv/bin/python experiments/bench_vs_torch.py [--out EXP_DIR] [--config YAML]
        [--also EXP_DIR ...] [--ms256-tasks a,b,...] [--ms256-trials 256] [--no-grid | --table-only]
        [--md FILE]

--also adds finished experiment folders (another grid's rows, e.g. the Level-1 and the Level-2/3
grids run in separate sessions): their rows join the table and the MetaSchedule-256 choice, and
their chosen answers are judged like the main folder's (each folder keeps its own ms256.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmark.task import resolve  # noqa: E402
from candidate_tree import Tree  # noqa: E402

DEFAULT_OUT = ROOT / "experiments" / "out" / "cpu_vs_torch"


def run_grid(config: str, out: Path) -> None:
    """The exp grid, one job at a time (both cores to the job being measured); resumed if started."""
    base = [sys.executable, "-m", "leka.cli", "exp", "run", "--workers", "1"]
    cmd = base + (["--resume", str(out)] if (out / "experiment.yaml").exists() else [config, "--out", str(out)])
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=ROOT, env=env, check=True)


def _order(r: dict) -> tuple:
    return r["level"], r["task"], r["arm"]


def rows_of(out: Path) -> list[dict]:
    """The newest attempt's job_result.json of every job."""
    latest: dict[str, tuple[int, dict]] = {}
    for p in out.glob("runs/*/*/*/s*/a*/job_result.json"):
        r = json.loads(p.read_text())
        n = int(p.parent.name[1:])
        if r["job_id"] not in latest or latest[r["job_id"]][0] < n:
            latest[r["job_id"]] = (n, {**r, "_exp": str(out)})
    return sorted((r for _, r in latest.values()), key=_order)


def stratified(rows: list[dict], per_level: dict[int, int]) -> list[str]:
    """The first tasks of each level in name order (3 / 3 / 2 by default)."""
    out: list[str] = []
    for lv, k in per_level.items():
        out += sorted({r["task"] for r in rows if r["level"] == lv})[:k]
    return out


def answer_candidate(r: dict):
    from leka import ir

    if r.get("best_node") is None or not r.get("run_dir"):
        return None
    with Tree(Path(r["_exp"]) / r["run_dir"], create=False) as tree:
        text = tree.artifact(r["best_node"], "candidate.json")
    return ir.Candidate.model_validate_json(text) if text else None


def judge_ms(out: Path, rows: list[dict], tasks: list[str], trials: int, cache_dir: str) -> dict[str, dict]:
    """Each chosen task's answer against MetaSchedule-`trials` (tuned first, cached)."""
    from benchmark import baselines
    from benchmark.judge import Evaluator
    from leka.core.config import load_config

    path = out / f"ms{trials}.json"
    done: dict[str, dict] = json.loads(path.read_text()) if path.exists() else {}
    cfg = load_config([], ["baseline.kind=tuned", f"baseline.trials={trials}", f"baseline.cache_dir={cache_dir}"])
    for r in rows:
        key = f"{r['task']}/{r['arm']}"
        if r["task"] not in tasks or key in done:
            continue
        task = resolve(r["task"])
        t0 = time.perf_counter()
        print(f"[ms{trials}] {key}: tuning (cached after the first time) ...", flush=True)
        cell: dict = {}
        try:
            _, reused = baselines.ensure_tuned(task, "llvm", trials, cache_dir)
            cell["tune_s"] = 0.0 if reused else round(time.perf_counter() - t0, 1)
            cand = answer_candidate(r)
            if cand is None:
                cell["error"] = "no answer"
            else:
                res = Evaluator(cfg.evaluator, "llvm", cfg.baseline, cache_dir=cache_dir).evaluate(task, cand)
                cell.update(correct=res.correct, speedup=res.speedup if res.correct else None,
                            valid=res.timing_valid, spread=res.timing_spread,
                            error=None if res.correct else (res.error or "")[:160])
        except Exception as e:  # noqa: BLE001 - a task MetaSchedule cannot tune is a cell
            cell["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
        done[key] = cell
        path.write_text(json.dumps(done, indent=1))
        print(f"    {cell}", flush=True)
    return done


def bound_note(r: dict) -> str:
    """What bounds the answer: its hottest kernel in its own profile."""
    if r.get("best_node") is None or not r.get("run_dir"):
        return "no answer"
    try:
        with Tree(Path(r["_exp"]) / r["run_dir"], create=False) as tree:
            node = tree.get(r["best_node"])
            prof = node.profile or (tree.get(node.parent).profile if node.parent is not None else None)
    except Exception as e:  # noqa: BLE001 - an exported copy keeps no tree: the note says so
        return f"no tree to read ({type(e).__name__})"
    kernels = (prof or {}).get("kernels") or []
    if not kernels:
        return "no profile of the answer"
    k = kernels[0]
    return (f"{k['name']} ({k.get('kind', '?')}) {k['share']:.0%} of time, {k.get('bound', '?')}-bound at "
            f"{k.get('roof_fraction', 0):.0%} of its roofline ({k.get('gflops', 0):.1f} GFLOP/s)")


def _x(v, valid=None) -> str:
    if not isinstance(v, (int, float)):
        return "-"
    return f"{v:.2f}x" + ("" if valid in (None, True) else "*")


def _reference(out: Path) -> str:
    """The grid's judging reference (its baseline.tuned_trials): MS-N, or untuned TVM at 0."""
    import yaml

    try:
        n = int((yaml.safe_load((out / "experiment.yaml").read_text()).get("baseline") or {}).get("tuned_trials", 64))
    except (OSError, ValueError, AttributeError):
        n = 64
    return f"MS-{n}" if n else "untuned (judged)"


def table(outs: list[Path], rows: list[dict], ms: dict[str, dict], trials: int) -> str:
    ref = " / ".join(dict.fromkeys(_reference(o) for o in outs))
    lines = [f"| task | lvl | arm | correct | vs untuned | vs torch eager | vs {ref} | vs MS-{trials} | evals | "
             "behind torch: what bounds it |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = ms.get(f"{r['task']}/{r['arm']}")
        mcell = "" if m is None else (_x(m.get("speedup"), m.get("valid")) if m.get("speedup") else
                                      f"- ({(m.get('error') or '')[:40]})")
        behind = r.get("correct") and (r.get("speedup_torch") or 0) < 1.0
        summ = Path(r["_exp"]) / str(r.get("run_dir") or "-") / "summary.json"
        untuned = json.loads(summ.read_text()).get("best_speedup") if summ.is_file() else None
        lines.append(f"| {r['task']} | {r['level']} | {r['arm']} | {r.get('correct')} | {_x(untuned)} | "
                     f"{_x(r.get('speedup_torch'), r.get('timing_valid_torch'))} | "
                     f"{_x(r.get('speedup_ref'), r.get('timing_valid_ref'))} | {mcell} | {r.get('evaluations', '-')} | "
                     f"{bound_note(r) if behind else ''} |")
    lines.append("")
    for arm in sorted({r["arm"] for r in rows}):
        rs = [r for r in rows if r["arm"] == arm]
        l23 = [r.get("speedup_torch") or 0.0 for r in rs if r["level"] in (2, 3)]
        ahead = [ms[k] for k in ms if k.endswith(f"/{arm}")]
        n_ahead = sum((c.get("speedup") or 0) > 1.0 for c in ahead)
        near = sum(abs((c.get("speedup") or 0) - 1.0) < 0.05 for c in ahead)
        lines.append(f"**{arm}**: median Level-2/3 speedup over torch eager "
                     f"{statistics.median(l23) if l23 else float('nan'):.2f}x over {len(l23)} tasks (target >= 1.0); "
                     f"ahead of MetaSchedule-{trials} on {n_ahead}/{len(ahead)} (target >= 5 of 8; {near} of all "
                     f"{len(ahead)} within 5% of parity, a tie on this noisy machine); "
                     f"correct {sum(bool(r.get('correct')) for r in rs)}/{len(rs)}.")
    lines.append("`*`: timing spread over the evaluator's bound (noisy). vs untuned: the run's own best speedup.")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "experiments" / "configs" / "cpu_vs_torch.yaml"))
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="the experiment folder (resumed if it exists)")
    ap.add_argument("--also", action="append", default=[], help="another finished experiment folder (repeatable)")
    ap.add_argument("--ms256-trials", type=int, default=256)
    ap.add_argument("--ms256-tasks", default="", help="comma list (default: the first 3 / 3 / 2 of levels 1 / 2 / 3)")
    ap.add_argument("--cache-dir", default=str(ROOT / ".leka-cache"))
    ap.add_argument("--no-grid", action="store_true", help="judge and tabulate the jobs already finished, run none")
    ap.add_argument("--table-only", action="store_true", help="no runs, no tuning: the table of what is there")
    ap.add_argument("--md", default="", help="also write the table (machine, date) to this file")
    args = ap.parse_args()
    out = Path(args.out)
    if not (args.table_only or args.no_grid):
        run_grid(args.config, out)
    outs = [out] + [Path(a) for a in args.also]
    for o in outs[1:]:
        if not (o / "experiment.yaml").exists():
            sys.exit(f"--also {o}: not an experiment folder (no experiment.yaml)")
    per = {o: rows_of(o) for o in outs}
    rows = sorted((r for rs in per.values() for r in rs), key=_order)
    if not rows:
        sys.exit(f"{out}: no finished job yet")
    tasks = [t for t in args.ms256_tasks.split(",") if t] or stratified(rows, {1: 3, 2: 3, 3: 2})
    ms: dict[str, dict] = {}
    for o in outs:
        f = o / f"ms{args.ms256_trials}.json"
        if args.table_only:
            ms.update(json.loads(f.read_text()) if f.exists() else {})
        else:
            ms.update(judge_ms(o, per[o], tasks, args.ms256_trials, args.cache_dir))
    import torch

    head = (f"machine: {platform.node()}, {os.cpu_count()} cores; torch {torch.__version__} eager; "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; MetaSchedule-{args.ms256_trials} tasks: "
            f"{', '.join(tasks)}")
    text = head + "\n\n" + table(outs, rows, ms, args.ms256_trials)
    print(text)
    if args.md:
        Path(args.md).write_text(text + "\n")


if __name__ == "__main__":
    main()
