"""LEKA on the 23 OpenCL tasks of subset69 (backend opencl): Compile@1, Correct@1 and Fast@1.0 vs the
untuned baseline (DLight GPU rules), one rule-policy run per task on an OpenCL device.

Locally the device is PoCL on this machine's CPU (label the numbers CPU-OpenCL: they say nothing
about a mobile GPU's speed); `--device rpc://HOST:PORT/KEY` runs the same on a board.

    .venv/bin/python experiments/bench_opencl.py [--budget 75s] [--tasks a,b] [--device local]

Per task: whether the DLight root compiles and is correct on the device; the run's answer (its best
node): compiled, correct, speedup vs DLight measured in interleaved pairs, timing valid, nodes per
level. Compile@1 / Correct@1: the answer compiles / is correct. Fast@1.0: the answer is correct, is
not the root itself, and its measured speedup over DLight is >= 1.0.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmark.subsets import load_subset  # noqa: E402
from benchmark.task import resolve  # noqa: E402
from candidate_tree import Tree  # noqa: E402
from leka.run import parse_duration, run  # noqa: E402


def one_task(tid: str, budget: float, out: str, device: str) -> dict:
    task = resolve(tid)
    row: dict = {"task": task.id, "level": task.level}
    t0 = time.perf_counter()
    try:
        s = run(task.id, overrides=["backend=opencl", f"run.budget_s={budget}", "run.policy=rules",
                                    f"run.out={out}", f"device.url='{device}'"], quiet=True)
    except Exception as e:  # noqa: BLE001 - one task's failure is a row, not the end of the table
        row.update(error=f"{type(e).__name__}: {str(e).splitlines()[0][:160]}", wall_s=time.perf_counter() - t0)
        return row
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    with Tree(s["run_dir"], create=False) as tree:
        nodes = tree.nodes()
        root = next((n for n in nodes if n.level is None), None)
        rr = root.result if root else None
        row["dlight_compiled"] = bool(rr and rr.compiled)
        row["dlight_correct"] = bool(rr and rr.correct)
        row["dlight_error"] = (rr.error_kind if rr else "no root") if not row["dlight_correct"] else None
        best = tree.get(s["best_node"]) if s["best_node"] is not None else None
        br = best.result if best else None
    row.update(best_node=s["best_node"], best_is_root=bool(best and root and best.id == root.id),
               compiled=bool(br and br.compiled), correct=bool(s["best_correct"]),
               speedup=s["best_speedup_vs_untuned"], timing_valid=s.get("best_timing_valid"),
               nodes=s["nodes_by_level"], evals=s["evaluations"], run_dir=os.path.relpath(s["run_dir"], ROOT))
    row["fast"] = bool(row["correct"] and not row["best_is_root"] and (row["speedup"] or 0) >= 1.0)
    return row


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()}, {len(os.sched_getaffinity(0))} cores"
    return platform.processor() or platform.machine()


def table(rows: list[dict], budget: float, device: str) -> str:
    n = len(rows)
    lines = ["| task | lvl | DLight ok | compiled | correct | speedup vs DLight | valid | fast | L0/L1/L2 | evals |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['task']} | {r['level']} | - | error: {r['error']} | | | | | | |")
            continue
        nd = r["nodes"]
        dl = "yes" if r["dlight_correct"] else f"no ({r['dlight_error']})"
        sp = f"{r['speedup']:.2f}x" + (" (root)" if r["best_is_root"] else "") if r["speedup"] else "-"
        lines.append(f"| {r['task']} | {r['level']} | {dl} | {r['compiled']} | {r['correct']} | {sp} | "
                     f"{r['timing_valid']} | {r['fast']} | {nd['L0']}/{nd['L1']}/{nd['L2']} | {r['evals']} |")
    c1 = sum(r.get("compiled", False) for r in rows)
    k1 = sum(r.get("correct", False) for r in rows)
    f1 = sum(r.get("fast", False) for r in rows)
    fv = sum(r.get("fast", False) and bool(r.get("timing_valid")) for r in rows)
    dl = sum(r.get("dlight_correct", False) for r in rows)
    lines += ["", f"Device {device} ({'CPU-OpenCL: PoCL on ' + _cpu() if device == 'local' else device}); "
              f"rule policy, {budget:.0f} s per task; {n} tasks.",
              f"**Compile@1 {c1}/{n} = {c1 / n:.2f}, Correct@1 {k1}/{n} = {k1 / n:.2f}, "
              f"Fast@1.0 vs DLight {f1}/{n} = {f1 / n:.2f}** ({fv} of them with timing spread under the "
              f"bound); DLight baseline correct on the device: {dl}/{n}."]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subset", default="subset69")
    ap.add_argument("--tasks", default="", help="comma list of ids instead of the subset's opencl tasks")
    ap.add_argument("--budget", default="75s")
    ap.add_argument("--device", default="local", help="local | rpc://HOST:PORT/KEY")
    ap.add_argument("--out", default=str(ROOT / "experiments" / "out" / "bench_opencl"))
    ap.add_argument("--table", default="", help="print the table of a saved JSON (this script's output) and stop")
    args = ap.parse_args()
    budget = parse_duration(args.budget)
    if args.table:
        print(table(json.loads(Path(args.table).read_text()), budget, args.device))
        return
    ids = [t for t in args.tasks.split(",") if t] or load_subset(args.subset, "opencl")
    rows = []
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for i, tid in enumerate(ids, 1):
        print(f"[{i}/{len(ids)}] {tid} ...", flush=True)
        r = one_task(tid, budget, args.out, args.device)
        rows.append(r)
        print(f"    {json.dumps({k: v for k, v in r.items() if k not in ('run_dir',)})}", flush=True)
        (out / f"bench_opencl-{stamp}.json").write_text(json.dumps(rows, indent=1))
    print()
    print(f"machine: {platform.node()} {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(table(rows, budget, args.device))


if __name__ == "__main__":
    main()
