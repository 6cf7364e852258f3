"""Issue 26, before and after, side by side in one run: the candidate judged in the evaluation process
(`evaluator.sandbox = false`: main before issue 26) against the sandboxed worker (the default now).

A. Honest speedups: for each task, LEKA's own answer (`leka run`, rule policy, a short budget) is
   evaluated against untuned TVM under both protocols, interleaved (ABBA over rounds). After/before is
   the acceptance ratio: within 5% for kernels of 100 us or more.
B. A-vs-A: every subset69 task's (llvm, or `--backend cuda|opencl` on its device) untouched root against untuned TVM (the same program on both
   arms) under both protocols: the share within [0.97, 1.03], and the evaluation's wall time per level.

    PYTHONPATH=. .venv/bin/python experiments/bench_sandbox.py [--tasks ...] [--rounds 3] [--budget 45]
                                                              [--aa-rounds 1] [--skip-a] [--skip-b]
                                                              [--set ARM:key=value ...]
`--set` changes one arm's evaluator settings, e.g. `--set before:sandbox=true --set before:sandbox_hold=0`
compares two sandboxed timings side by side.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmark.judge import Evaluator, geomean
from benchmark.task import resolve
from leka.core.config import EvaluatorConfig
from leka.ir.files import load_candidate

TASKS = ("l1_matmul_square,l1_conv2d_pointwise,l1_conv1d_depthwise_k15,l2_dwconv3x3_bn_relu6,"
         "l2_conv3x3_s2_bn_silu,l2_shufflenet_unit,l3_mobilenet_v2,l3_nanodet_head")
ARMS = ("before", "after")


SETS: dict[str, dict[str, object]] = {"before": {"sandbox": False}, "after": {"sandbox": True}}


def _evaluators(cache: str, backend: str = "llvm") -> dict[str, Evaluator]:
    extra = {} if backend == "llvm" else {"memory_cap_gb": 16.0, "timeout_s": 300}
    return {a: Evaluator(EvaluatorConfig(**{**extra, **SETS[a]}), backend, cache_dir=cache) for a in ("before", "after")}


def _arm_set(text: str) -> None:
    """`ARM:key=value` (e.g. `before:sandbox=true`): an evaluator setting of one arm, parsed as JSON where
    it parses (`true`, `0`, `3.5`), else kept as text; the pydantic config validates it."""
    arm, _, kv = text.partition(":")
    key, eq, val = kv.partition("=")
    if arm not in SETS or not key or not eq:
        raise SystemExit(f"--set wants ARM:key=value with ARM before or after, got {text!r}")
    try:
        SETS[arm][key] = json.loads(val)
    except json.JSONDecodeError:
        SETS[arm][key] = val


def leka_answer(task_id: str, budget_s: int, out: Path, cache: str):
    """LEKA's answer for the task: a rule-policy run of `budget_s`, its best node."""
    cmd = [sys.executable, "-m", "leka.cli", "run", "--task", task_id, "--budget", f"{budget_s}s", "--out", str(out),
           "--set", f"baseline.cache_dir={cache}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run_dir = max((p for p in out.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    task = resolve(task_id)
    return task, load_candidate(task, run_dir, "llvm", workdir=Path(cache) / "candidates")


def _interval(xs: list[float]) -> str:
    return f"[{min(xs):.2f}, {max(xs):.2f}]" if len(xs) > 1 else ""


def ratio_interval(before: list[float], after: list[float], n: int = 2000, seed: int = 0) -> tuple[float, float]:
    """A 95% percentile-bootstrap interval of median(after) / median(before), each arm's rounds resampled
    on their own: how far the ratio could move from round-to-round noise alone."""
    if len(before) < 2 or len(after) < 2:
        return float("nan"), float("nan")
    rng = random.Random(seed)
    rs = sorted(statistics.median(rng.choices(after, k=len(after))) /
                statistics.median(rng.choices(before, k=len(before))) for _ in range(n))
    return rs[int(0.025 * n)], rs[int(0.975 * n) - 1]


def part_a(tasks: list[str], rounds: int, budget_s: int, cache: str) -> list[dict]:
    evs = _evaluators(cache)
    rows = []
    print(f"A. LEKA's answer ({budget_s} s, rules) / untuned TVM, {rounds} round(s) per protocol, interleaved")
    print(f"{'task':30s} {'t_cand':>9} {'before':>8} {'after':>8} {'after/before':>12} {'95% interval':>15}  "
          "before range / after range")
    for tid in tasks:
        task, cand = leka_answer(tid, budget_s, Path(cache) / "runs" / tid, cache)
        got: dict[str, list] = {a: [] for a in ARMS}
        for i in range(rounds):
            for arm in (ARMS if i % 2 == 0 else ARMS[::-1]):
                got[arm].append(evs[arm].evaluate(task, cand))
        sp = {a: [r.speedup for r in got[a] if r.speedup] for a in ARMS}
        med = {a: statistics.median(sp[a]) if sp[a] else float("nan") for a in ARMS}
        tc = statistics.median([r.t_candidate_s for r in got["after"] if r.t_candidate_s] or [float("nan")])
        ratio = med["after"] / med["before"]
        lo, hi = ratio_interval(sp["before"], sp["after"])
        errs = sorted({f"{a}:{r.error_kind}" for a in ARMS for r in got[a] if r.error_kind})
        rows.append({"task": tid, "t_candidate_s": tc, "before": med["before"], "after": med["after"], "ratio": ratio,
                     "ratio_interval": [lo, hi], "before_all": sp["before"], "after_all": sp["after"], "errors": errs,
                     "wall_before": statistics.median(r.wall_s for r in got["before"]),
                     "wall_after": statistics.median(r.wall_s for r in got["after"])})
        print(f"{tid:30s} {tc * 1e6:7.0f}us {med['before']:8.2f} {med['after']:8.2f} {ratio:12.3f} [{lo:5.3f}, {hi:5.3f}]  "
              f"{_interval(sp['before'])} / {_interval(sp['after'])} {' '.join(errs)}", flush=True)
    big = [r["ratio"] for r in rows if r["t_candidate_s"] >= 100e-6]
    if big:
        within = sum(0.95 <= x <= 1.05 for x in big)
        print(f"kernels >= 100 us: after/before within 5% on {within}/{len(big)}; "
              f"geomean {geomean(big):.3f}")
    return rows


def part_b(rounds: int, cache: str, backend: str = "llvm", limit: int = 0) -> list[dict]:
    evs = _evaluators(cache, backend)
    ids = json.loads(Path("benchmark/subsets/subset69.json").read_text())["backends"][backend]
    ids = ids[:limit] if limit else ids
    rows = []
    print(f"\nB. A-vs-A ({backend}): the root against untuned TVM, {rounds} round(s) per protocol")
    print(f"{'task':32s} {'before':>8} {'spread':>7} {'wall':>6} {'after':>8} {'spread':>7} {'wall':>6}")
    for tid in ids:
        task = resolve(tid)
        got: dict[str, list] = {a: [] for a in ARMS}
        for i in range(rounds):
            for arm in (ARMS if i % 2 == 0 else ARMS[::-1]):
                got[arm].append(evs[arm].evaluate(task, None))
        row = {"task": tid, "level": task.level}
        line = f"{tid:32s}"
        for a in ARMS:
            sp = [r.speedup for r in got[a] if r.speedup]
            row[a] = statistics.median(sp) if sp else None
            row[a + "_spread"] = statistics.median([r.timing_spread or 0 for r in got[a]])
            row[a + "_wall"] = statistics.median(r.wall_s for r in got[a])
            row[a + "_errors"] = sorted({r.error_kind for r in got[a] if r.error_kind})
            s = f"{row[a]:8.3f}" if row[a] else f"{'-':>8}"
            line += f" {s} {row[a + '_spread']:7.3f} {row[a + '_wall']:6.1f}"
        print(line + "  " + " ".join(f"{a}:{','.join(row[a + '_errors'])}" for a in ARMS if row[a + "_errors"]),
              flush=True)
        rows.append(row)
    for a in ARMS:
        ok = sum(1 for r in rows if r[a] and 0.97 <= r[a] <= 1.03)
        print(f"{a}: A/A within [0.97, 1.03] on {ok}/{len(rows)}")
        for lvl in (1, 2, 3):
            w = [r[a + "_wall"] for r in rows if r["level"] == lvl]
            if w:
                print(f"  level {lvl}: median evaluation wall time {statistics.median(w):.2f} s over {len(w)} task(s)")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default=TASKS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--aa-rounds", type=int, default=1)
    ap.add_argument("--budget", type=int, default=45)
    ap.add_argument("--skip-a", action="store_true")
    ap.add_argument("--skip-b", action="store_true")
    ap.add_argument("--json", default=None, help="write the rows here")
    ap.add_argument("--backend", default="llvm", help="part B's backend (cuda, opencl: on their device)")
    ap.add_argument("--b-tasks", type=int, default=0, help="part B: the first N subset tasks only")
    ap.add_argument("--arms", default="before,after", help="the protocols to run (before = evaluator.sandbox=false)")
    ap.add_argument("--set", action="append", default=[], metavar="ARM:key=value",
                    help="an evaluator setting of one arm, e.g. before:sandbox=true before:sandbox_hold=0")
    args = ap.parse_args()
    for text in args.set:
        _arm_set(text)
    global ARMS
    ARMS = tuple(a for a in args.arms.split(",") if a in ("before", "after"))
    cache = tempfile.mkdtemp(prefix="leka-sandbox-bench-")
    print(f"machine: {platform.processor() or platform.machine()}, {len(__import__('os').sched_getaffinity(0))} cpus; "
          f"python {platform.python_version()}; started {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"arms {SETS}")
    out: dict = {"arms": SETS}
    if not args.skip_a:
        out["a"] = part_a([t for t in args.tasks.split(",") if t], args.rounds, args.budget, cache)
    if not args.skip_b:
        out["b"] = part_b(args.aa_rounds, cache, args.backend, args.b_tasks)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
