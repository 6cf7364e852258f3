"""KernelBench-format files at KernelBench's sizes through `leka bench eval`, as a new user runs them:
per task the stage reached, peak resident memory, evaluation wall time.

The tasks are in experiments/kernelbench_format/ (written for this benchmark; each file's docstring
says which KernelBench problem and release its sizes come from). Each runs in its own
`python -m leka.cli bench eval FILE --json ...` (untuned TVM baseline, default evaluator: 3 seeds +
a fresh one, paired timing), one at a time.

    PYTHONPATH=$PWD .venv/bin/python experiments/bench_kernelbench_format.py [--tasks a,b] [--limit 300]
        [--out experiments/out/bench_kernelbench_format] [--md FILE]

Stage: the furthest step done - import (torch.export + TVM importer), build, check (correct on every
seed), timing (paired timing finished). A task passes when it is correct within --limit seconds of
wall time (the whole command: import, build, check, timing). Peak RSS: the evaluation's process tree
(the evaluator's watcher, which also enforces the memory cap). Resumable: a task with a JSON in --out
is not run again (delete it to re-run).
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
TASKS = ROOT / "experiments" / "kernelbench_format"


def stage(r: dict) -> str:
    kind = r.get("error_kind")
    if r.get("correct"):
        return "timing" if r.get("speedup") else "check"
    if kind in ("import", "bad_input"):
        return f"refused ({kind})" if kind == "bad_input" else "import failed"
    if kind in ("timeout", "oom", "crash", "no_result"):
        during = (r.get("extra") or {}).get("killed_in")  # the step it was in (the runner's .step marker)
        return f"killed ({kind}{', in ' + during if during else ''})"
    if not r.get("compiled"):
        return "build failed"
    return f"check failed ({kind})" if kind else "check failed"


def run_one(path: Path, out: Path, limit: float, extra: list[str]) -> dict:
    js = out / f"{path.stem}.json"
    cmd = [sys.executable, "-m", "leka.cli", "bench", "eval", str(path), "--json", str(js), *extra]
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=limit * 2 + 60)
        rc, tail = p.returncode, (p.stdout + p.stderr).strip().splitlines()[-3:]
    except subprocess.TimeoutExpired:
        rc, tail = None, [f"killed after {limit * 2 + 60:.0f} s"]
    wall = time.perf_counter() - t0
    r = json.loads(js.read_text()) if js.exists() else {"correct": False, "error_kind": "no_result",
                                                          "error": " | ".join(tail)[:300]}
    row = {"task": path.stem, "level": int(path.stem.split("_")[1][1]), "rc": rc, "wall_s": round(wall, 1),
           "stage": stage(r), "correct": bool(r.get("correct")), "speedup": r.get("speedup"),
           "timing_valid": r.get("timing_valid"), "n_pairs": r.get("n_pairs"),
           "peak_rss_gib": round(r["peak_rss_bytes"] / 2**30, 2) if r.get("peak_rss_bytes") else None,
           "build_s": r.get("build_s"), "check_s": r.get("check_s"), "timing_s": r.get("timing_s"),
           "error": (r.get("error") or "")[:200] or None, "within_limit": wall <= limit,
           "timing_limited": (r.get("extra") or {}).get("timing_limited")}
    js.with_suffix(".row.json").write_text(json.dumps(row, indent=1))
    return row


def _f(x, fmt: str) -> str:
    return format(x, fmt) if isinstance(x, (int, float)) else "-"


def table(rows: list[dict], limit: float) -> str:
    lines = ["| task | lvl | stage | correct | wall s | peak RSS GiB | build s | check s | timing s | pairs | "
             "A/A | note |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        note = r["error"] or ("over the limit" if not r["within_limit"] else "")
        lines.append(f"| {r['task']} | {r['level']} | {r['stage']} | {r['correct']} | {r['wall_s']:.0f} | "
                     f"{_f(r['peak_rss_gib'], '.2f')} | {_f(r['build_s'], '.1f')} | {_f(r['check_s'], '.1f')} | "
                     f"{_f(r['timing_s'], '.1f')} | {r['n_pairs'] or '-'} | {_f(r['speedup'], '.2f')} | "
                     f"{note[:90]} |")
    n = len(rows)
    ok = sum(r["correct"] and r["within_limit"] for r in rows)
    walls = [r["wall_s"] for r in rows]
    lines += ["", f"**{ok}/{n} = {ok / n:.0%} correct within {limit:.0f} s** (target: 90%); median wall "
              f"{statistics.median(walls):.0f} s, max {max(walls):.0f} s; peak RSS max "
              f"{max((r['peak_rss_gib'] or 0) for r in rows):.2f} GiB."]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="", help="comma list of file stems (default: every file in "
                    "experiments/kernelbench_format)")
    ap.add_argument("--limit", type=float, default=300.0, help="seconds a task may take to count as passed")
    ap.add_argument("--out", default=str(ROOT / "experiments" / "out" / "bench_kernelbench_format"))
    ap.add_argument("--md", default="", help="also write the table (with machine and date) to this file")
    ap.add_argument("--set", action="append", default=[], help="evaluator override key=value, passed on")
    args = ap.parse_args()
    files = sorted(TASKS.glob("kb_*.py"))
    if args.tasks:
        want = set(args.tasks.split(","))
        unknown = want - {f.stem for f in files}
        if unknown:
            sys.exit(f"unknown task(s): {', '.join(sorted(unknown))} (see {TASKS})")
        files = [f for f in files if f.stem in want]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    extra = [a for kv in args.set for a in ("--set", kv)]
    rows = []
    for i, f in enumerate(files, 1):
        done = out / f"{f.stem}.row.json"
        if done.exists():
            rows.append(json.loads(done.read_text()))
            print(f"[{i}/{len(files)}] {f.stem}: done before ({rows[-1]['stage']})", flush=True)
            continue
        print(f"[{i}/{len(files)}] {f.stem} ...", flush=True)
        rows.append(run_one(f, out, args.limit, extra))
        r = rows[-1]
        print(f"    {r['stage']}, correct={r['correct']}, wall {r['wall_s']:.0f} s, peak RSS {r['peak_rss_gib']} GiB"
              + (f", {r['error']}" if r["error"] else ""), flush=True)
    head = (f"machine: {platform.node()}, {os.cpu_count()} cores, "
            f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB; "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    text = head + "\n\n" + table(rows, args.limit)
    print()
    print(text)
    if args.md:
        Path(args.md).write_text(text + "\n")


if __name__ == "__main__":
    main()
