"""LEKA on the 23 OpenCL tasks of subset69 (backend opencl): Compile@1, Correct@1 and Fast@1.0 vs the
untuned baseline (DLight GPU rules) and vs MetaSchedule-N, one rule-policy run per task on an OpenCL
device.

Locally the device is PoCL on this machine's CPU (label the numbers CPU-OpenCL: they say nothing
about a mobile GPU's speed); `--device rpc://HOST:PORT/KEY` runs the same on a board (`--config
board.yaml` for its target and cross compiler, docs/boards.md).

    .venv/bin/python experiments/bench_opencl.py [--budget 75s] [--tasks a,b] [--device local]
        [--ms-trials N [--tune-only]]

Per task: whether the DLight root compiles and is correct on the device; the run's answer (its best
node): compiled, correct, speedup vs DLight measured in interleaved pairs, timing valid, nodes per
level. Compile@1 / Correct@1: the answer compiles / is correct. Fast@1.0: the answer is correct, is
not the root itself, and its measured speedup over DLight is >= 1.0.

With `--ms-trials N`: every task's MetaSchedule-N database is tuned first, before any run or timing
(`leka bench baseline`, cached in --cache-dir, so a second invocation reuses it; `--tune-only` stops
there), so no tuning competes with a measurement. After each run, its answer is evaluated once more
against MetaSchedule-N (interleaved pairs on the same device): Fast@1.0 vs MetaSchedule-N counts a
correct answer that is at least as fast, the root included (DLight is not that baseline).
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


def tune_all(ids: list[str], trials: int, cache_dir: str, configs: list[str], device: str) -> dict[str, dict]:
    """MetaSchedule-N for every task, before any run (cached: a tuned task is only looked up)."""
    from benchmark import baselines
    from leka.core.config import load_config

    dev = load_config(configs, [f"device.url='{device}'"]).device
    out: dict[str, dict] = {}
    for i, tid in enumerate(ids, 1):
        task = resolve(tid)
        t0 = time.perf_counter()
        print(f"[tune {i}/{len(ids)}] {task.id}: MetaSchedule-{trials} ...", flush=True)
        try:
            d, reused = baselines.ensure_tuned(task, "opencl", trials, cache_dir, device=dev)
            out[task.id] = {"ms_trials": trials, "ms_reused": reused, "ms_tune_s": round(time.perf_counter() - t0, 1),
                            "ms_db": os.path.relpath(d, ROOT)}
        except Exception as e:  # noqa: BLE001 - a task MetaSchedule cannot tune is a table cell
            out[task.id] = {"ms_trials": trials, "ms_error": f"{type(e).__name__}: {str(e).splitlines()[0][:160]}" if str(e) else
                            type(e).__name__}
        print(f"    {json.dumps(out[task.id])}", flush=True)
    return out


def vs_metaschedule(task, run_dir: str, node: int, trials: int, cache_dir: str, configs: list[str],
                    overrides: list[str]) -> dict:
    """The run's answer against MetaSchedule-N: one more evaluation, same evaluator and device."""
    from benchmark.judge import Evaluator
    from leka import ir
    from leka.core.config import load_config

    cfg = load_config(configs, overrides)
    with Tree(run_dir, create=False) as tree:
        cand = ir.Candidate.model_validate_json(tree.artifact(node, "candidate.json"))
    ev = Evaluator(cfg.evaluator, "opencl", cfg.baseline.model_copy(update={"kind": "tuned", "trials": trials,
                                                                           "cache_dir": cache_dir}),
                   cache_dir=cache_dir, device=cfg.device)
    r = ev.evaluate(task, cand)
    # correct but untimed (the tuned baseline failed to build or run): the error still says why
    return {"ms_correct": r.correct, "ms_speedup": r.speedup if r.correct else None,
            "ms_timing_valid": r.timing_valid,
            "ms_eval_error": (r.error or "")[:160] if not r.correct or r.speedup is None else None}


def one_task(tid: str, budget: float, out: str, device: str, configs: list[str] = (), ms_trials: int = 0,
             cache_dir: str = "", ms_row: dict | None = None) -> dict:
    task = resolve(tid)
    row: dict = {"task": task.id, "level": task.level, **(ms_row or {})}
    overrides = ["backend=opencl", f"run.budget_s={budget}", "run.policy=rules", f"run.out={out}",
                 f"device.url='{device}'"]
    t0 = time.perf_counter()
    try:
        s = run(tid, config_files=list(configs), overrides=overrides, quiet=True)  # an id or a task file
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
    if ms_trials and s["best_node"] is not None and "ms_db" in row:
        try:
            row.update(vs_metaschedule(task, s["run_dir"], s["best_node"], ms_trials, cache_dir, list(configs),
                                       overrides))
        except Exception as e:  # noqa: BLE001 - a failed comparison is a cell
            row["ms_eval_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
        row["fast_ms"] = bool(row.get("ms_correct") and (row.get("ms_speedup") or 0) >= 1.0)
    return row


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()}, {len(os.sched_getaffinity(0))} cores"
    return platform.processor() or platform.machine()


def _ms_cell(r: dict) -> str:
    """The answer vs MetaSchedule-N: speedup (valid?) or why there is none."""
    if "ms_error" in r:
        return f"not tuned: {r['ms_error'][:60]}"
    if r.get("ms_speedup"):
        return f"{r['ms_speedup']:.2f}x" + (" (root)" if r.get("best_is_root") else "") + \
            ("" if r.get("ms_timing_valid") else " (noisy)")
    return f"- ({(r.get('ms_eval_error') or 'no answer')[:60]})"


def table(rows: list[dict], budget: float, device: str, ms_trials: int = 0, label: str = "") -> str:
    n = len(rows)
    ms_trials = ms_trials or next((r["ms_trials"] for r in rows if r.get("ms_trials")), 0)  # a saved JSON's N
    ms = f"MetaSchedule-{ms_trials}"
    head = "| task | lvl | DLight ok | compiled | correct | speedup vs DLight | valid | fast | L0/L1/L2 | evals |"
    lines = [head + (f" vs {ms} | fast vs {ms} |" if ms_trials else ""),
             "|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if ms_trials else "")]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['task']} | {r['level']} | - | error: {r['error']} | | | | | | |" + (" | |" if ms_trials else ""))
            continue
        nd = r["nodes"]
        dl = "yes" if r["dlight_correct"] else f"no ({r['dlight_error']})"
        sp = f"{r['speedup']:.2f}x" + (" (root)" if r["best_is_root"] else "") if r["speedup"] else "-"
        lines.append(f"| {r['task']} | {r['level']} | {dl} | {r['compiled']} | {r['correct']} | {sp} | "
                     f"{r['timing_valid']} | {r['fast']} | {nd['L0']}/{nd['L1']}/{nd['L2']} | {r['evals']} |"
                     + (f" {_ms_cell(r)} | {r.get('fast_ms', False)} |" if ms_trials else ""))
    c1 = sum(r.get("compiled", False) for r in rows)
    k1 = sum(r.get("correct", False) for r in rows)
    f1 = sum(r.get("fast", False) for r in rows)
    fv = sum(r.get("fast", False) and bool(r.get("timing_valid")) for r in rows)
    dl = sum(r.get("dlight_correct", False) for r in rows)
    where = label or ('CPU-OpenCL: PoCL on ' + _cpu() if device == 'local' else device)
    lines += ["", f"Device {device} ({where}); "
              f"rule policy, {budget:.0f} s per task; {n} tasks.",
              f"**Compile@1 {c1}/{n} = {c1 / n:.2f}, Correct@1 {k1}/{n} = {k1 / n:.2f}, "
              f"Fast@1.0 vs DLight {f1}/{n} = {f1 / n:.2f}** ({fv} of them with timing spread under the "
              f"bound); DLight baseline correct on the device: {dl}/{n}."]
    if ms_trials:
        fm = sum(r.get("fast_ms", False) for r in rows)
        fmv = sum(r.get("fast_ms", False) and bool(r.get("ms_timing_valid")) for r in rows)
        tuned = sum("ms_db" in r for r in rows)
        secs = [r["ms_tune_s"] for r in rows if "ms_tune_s" in r and not r.get("ms_reused")]
        lines.append(f"**Fast@1.0 vs {ms} {fm}/{n} = {fm / n:.2f}** ({fmv} of them with timing spread under "
                     f"the bound); {ms} ({ms_trials} trials per task, max_trials_global) tuned for {tuned}/{n} "
                     f"tasks" + (f", {sum(secs):.0f} s of tuning in this invocation" if secs else " (cached)") + ".")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subset", default="subset69")
    ap.add_argument("--tasks", default="", help="comma list of ids instead of the subset's opencl tasks")
    ap.add_argument("--budget", default="75s")
    ap.add_argument("--device", default="local", help="local | rpc://HOST:PORT/KEY")
    ap.add_argument("--out", default=str(ROOT / "experiments" / "out" / "bench_opencl"))
    ap.add_argument("--config", action="append", default=[], help="YAML overlay (repeatable), e.g. board.yaml")
    ap.add_argument("--ms-trials", type=int, default=0, help="N: also Fast@1.0 vs MetaSchedule-N, tuned first "
                    "(cached); 0: no such column")
    ap.add_argument("--tune-only", action="store_true", help="tune the MetaSchedule-N baselines and stop")
    ap.add_argument("--cache-dir", default=str(ROOT / ".leka-cache"), help="where the MetaSchedule databases are")
    ap.add_argument("--table", default="", help="print the table of saved JSONs (this script's output; several, "
                    "comma-separated, are concatenated in that order) and stop")
    ap.add_argument("--label", default="", help="what the device is, for the table (default: PoCL on this CPU for "
                    "local, else the URL), e.g. 'NVIDIA OpenCL, H200'")
    args = ap.parse_args()
    budget = parse_duration(args.budget)
    if args.table:
        rows = [r for f in args.table.split(",") if f for r in json.loads(Path(f).read_text())]
        print(table(rows, budget, args.device, args.ms_trials, args.label))
        return
    ids = [t for t in args.tasks.split(",") if t] or load_subset(args.subset, "opencl")
    rows = []
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    ms_rows = tune_all(ids, args.ms_trials, args.cache_dir, args.config, args.device) if args.ms_trials else {}
    if args.tune_only:
        return
    for i, tid in enumerate(ids, 1):
        print(f"[{i}/{len(ids)}] {tid} ...", flush=True)
        r = one_task(tid, budget, args.out, args.device, args.config, args.ms_trials, args.cache_dir,
                     ms_rows.get(resolve(tid).id))
        rows.append(r)
        print(f"    {json.dumps({k: v for k, v in r.items() if k not in ('run_dir',)})}", flush=True)
        (out / f"bench_opencl-{stamp}.json").write_text(json.dumps(rows, indent=1))
    print()
    print(f"machine: {platform.node()} {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(table(rows, budget, args.device, args.ms_trials, args.label))


if __name__ == "__main__":
    main()
