"""Where a sandboxed timing request's time goes (issue 26): A-vs-A evaluations (the root against
untuned TVM, the same program on both arms) with `evaluator.timing_diag` on, each timed request split
into the worker's own clock around its calls and the rest of the judge's clock (signals, the socket,
waking the worker's threads). Per task: the A/A speedup the judge reported, the A/A ratio of the
medians by either clock, the spread (IQR / median of per-call times) of each arm by either clock, and
the request overhead, the judge's own CPU time during a request and the worker's page faults in one.
The worker's clock is a diagnostic only: the candidate controls that process.

    PYTHONPATH=. .venv/bin/python experiments/bench_sandbox_split.py [--tasks a,b] [--rounds 1]
        [--set evaluator.key=value ...]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

from benchmark.judge import Evaluator
from benchmark.task import resolve
from leka.core.config import EvaluatorConfig


def _iqr(xs: list[float]) -> float:
    if len(xs) < 4:
        return (max(xs) - min(xs)) / statistics.median(xs) if len(xs) > 1 else 0.0
    q = statistics.quantiles(xs, n=4)
    return (q[2] - q[0]) / statistics.median(xs)


def split(diag: list[list]) -> dict[str, float]:
    """Per arm: median per-call seconds by the judge's and the worker's clock, their spreads, and the
    median request overhead (judge - worker) and refill time. Only the timed (drawn) requests count."""
    out: dict[str, float] = {}
    for arm in ("c", "b"):
        rows = [r for r in diag if r[0] == arm and r[5] and r[3] is not None]
        if not rows:
            return {}
        judge = [r[2] / r[1] for r in rows]
        worker = [r[3] / r[1] for r in rows]
        out[arm + "_judge"] = statistics.median(judge)
        out[arm + "_worker"] = statistics.median(worker)
        out[arm + "_judge_spread"] = _iqr(judge)
        out[arm + "_worker_spread"] = _iqr(worker)
        out[arm + "_over_us"] = statistics.median((r[2] - r[3]) * 1e6 for r in rows)
        out[arm + "_fill_ms"] = statistics.median(r[4] * 1e3 for r in rows)
        out[arm + "_requests"] = len(rows)
        # the judge's own CPU time during the request: near zero unless a thread of its spins meanwhile
        out[arm + "_judge_cpu_ms"] = statistics.median(r[7] * 1e3 for r in rows)
        out[arm + "_faults"] = statistics.median((r[6] or [0])[0] for r in rows)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="", help="comma-separated task ids (default: the llvm subset's 23)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--set", action="append", default=[], help="evaluator.key=value (repeatable)")
    ap.add_argument("--json", default="", help="write the rows here")
    a = ap.parse_args()
    ids = a.tasks.split(",") if a.tasks else \
        json.loads(Path("benchmark/subsets/subset69.json").read_text())["backends"]["llvm"]
    over = {}
    for kv in a.set:
        k, _, v = kv.partition("=")
        over[k.removeprefix("evaluator.")] = json.loads(v) if v[:1] in "0123456789-[{tf" else v
    cfg = EvaluatorConfig(sandbox=True, timing_diag=True, **over)
    print(f"# bench_sandbox_split {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, "
          f"{platform.processor() or platform.machine()}, overrides {over or 'none'}")
    cache = tempfile.mkdtemp(prefix="leka-split-")
    ev = Evaluator(cfg, "llvm", cache_dir=cache)
    print(f"{'task':32s} {'A/A':>6} {'judge':>6} {'worker':>6} {'t_call':>8} {'j.spr c/b':>11} {'w.spr c/b':>11} "
          f"{'over us':>8} {'fill ms':>7} {'req':>4} {'j.cpu ms':>8} {'faults':>6}")
    rows = []
    for tid in ids:
        task = resolve(tid)
        for _ in range(a.rounds):
            r = ev.evaluate(task, None)
            s = split(r.extra.get("timing_diag", []))
            row = {"task": tid, "speedup": r.speedup, "error": r.error_kind, **s,
                   "raw": r.extra.get("timing_diag", [])}
            rows.append(row)
            if not s:
                print(f"{tid:32s} {r.speedup or 0:6.3f} no split ({r.error_kind}: {(r.error or '')[:80]})")
                continue
            print(f"{tid:32s} {r.speedup or 0:6.3f} {s['b_judge'] / s['c_judge']:6.3f} "
                  f"{s['b_worker'] / s['c_worker']:6.3f} {s['c_judge'] * 1e6:7.0f}u "
                  f"{s['c_judge_spread']:5.3f}/{s['b_judge_spread']:5.3f} "
                  f"{s['c_worker_spread']:5.3f}/{s['b_worker_spread']:5.3f} "
                  f"{s['c_over_us']:8.0f} {s['c_fill_ms']:7.2f} {s['c_requests']:4d} {s['c_judge_cpu_ms']:8.2f} "
                  f"{s['c_faults']:6.0f}"
                  + (f"  {r.error_kind}" if r.error_kind else ""), flush=True)
    ok = sum(1 for r in rows if r["speedup"] and 0.97 <= r["speedup"] <= 1.03)
    okw = sum(1 for r in rows if r.get("c_worker") and 0.97 <= r["b_worker"] / r["c_worker"] <= 1.03)
    print(f"A/A within [0.97, 1.03]: reported {ok}/{len(rows)}; by the worker's clock (medians) {okw}/{len(rows)}")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
