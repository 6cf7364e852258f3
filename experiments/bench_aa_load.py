"""Issue 27: A-vs-A under a synthetic load. A busy loop holds one of the machine's cores (a process
this script starts and stops) while each task's untouched root is judged against untuned TVM, the
same program on both arms, N times per task. An honest judge calls that "faster" (the speedup
interval's lower bound above 1) at most at its error rate: the acceptance is at most 5% over 50
evaluations of 5 llvm tasks. Also reported: how many evaluations the load detector flagged
(`extra["machine_load"]`), how many intervals were too wide to trust, and the speedups' spread.

    PYTHONPATH=. .venv/bin/python experiments/bench_aa_load.py [--tasks a,b,...] [--per-task 10] [--no-load]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmark.judge import Evaluator
from benchmark.task import resolve
from leka.core.config import EvaluatorConfig

TASKS = "l1_matmul_square,l1_conv2d_pointwise,l1_mish,l2_dwconv3x3_bn_relu6,l3_mobilenet_v2"
BUSY = "while True:\n    pass\n"


def busy_loop() -> subprocess.Popen:
    """One core held by a Python busy loop (its own session: killed as a group at the end)."""
    return subprocess.Popen([sys.executable, "-c", BUSY], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default=TASKS)
    ap.add_argument("--per-task", type=int, default=10)
    ap.add_argument("--no-load", action="store_true", help="the same without the busy loop (the quiet control)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    tasks = [t for t in args.tasks.split(",") if t]
    cache = tempfile.mkdtemp(prefix="leka-aa-load-")
    ev = Evaluator(EvaluatorConfig(), cache_dir=cache)
    for t in tasks:  # warm: roots imported and kernels cached before the load starts
        ev.evaluate(resolve(t), time_it=False)
    print(f"machine: {platform.processor() or platform.machine()}, {len(os.sched_getaffinity(0))} cpus; "
          f"python {platform.python_version()}; started {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"load: {'none' if args.no_load else 'one busy-loop process'}")
    print(f"{'task':28s} {'n':>3} {'faster':>6} {'loaded':>6} {'wide':>5} {'median':>7} {'min..max'}")
    load = None if args.no_load else busy_loop()
    rows = []
    try:
        for t in tasks:
            task = resolve(t)
            got = [ev.evaluate(task) for _ in range(args.per_task)]
            for r in got:
                rows.append({"task": t, "speedup": r.speedup, "lo": r.speedup_lo, "hi": r.speedup_hi,
                             "faster": r.is_faster(), "error_kind": r.error_kind,
                             "loaded": bool((r.extra.get("machine_load") or {}).get("loaded")),
                             "sandbox": r.extra.get("sandbox")})
            mine = rows[-len(got):]
            sp = [x["speedup"] for x in mine if x["speedup"]]
            print(f"{t:28s} {len(mine):3d} {sum(x['faster'] for x in mine):6d} {sum(x['loaded'] for x in mine):6d} "
                  f"{sum(x['error_kind'] == 'timing_invalid' for x in mine):5d} "
                  f"{statistics.median(sp) if sp else float('nan'):7.3f} "
                  f"{min(sp) if sp else float('nan'):.3f}..{max(sp) if sp else float('nan'):.3f}", flush=True)
    finally:
        if load is not None:
            os.killpg(load.pid, signal.SIGKILL)
            load.wait()
    n = len(rows)
    faster = sum(x["faster"] for x in rows)
    print(f"false 'faster' (lower bound > 1): {faster}/{n} = {100 * faster / max(1, n):.1f}% "
          f"(acceptance: at most 5%); flagged loaded: {sum(x['loaded'] for x in rows)}/{n}; "
          f"interval too wide (timing_invalid): {sum(x['error_kind'] == 'timing_invalid' for x in rows)}/{n}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
