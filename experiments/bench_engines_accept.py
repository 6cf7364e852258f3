"""Issue 29's acceptance sweep of the production-engine baselines on the CPU: for each of the 23 llvm
subset tasks and each engine baseline (PyTorch eager, torch.compile, ONNX Runtime, MNN), one evaluation
of the task's root (the untuned TVM program) against that baseline, through the evaluator exactly as
`leka bench eval TASK --baseline KIND` runs it. It records whether the baseline ran and was judged
(ok), or the engine's reason. Not a timing benchmark: short timing options, speedups shown only as
information.

Resumable: one JSON line per (task, engine) in OUT/rows.jsonl, written as soon as it is measured; a
second run skips what is there. `--minutes M` stops starting evaluations after M minutes (run it again
to go on), so each run under the exclusive CPU lock stays short:

    flock -x /tmp/leka-cpu.lock env PYTHONPATH=$PWD .venv/bin/python experiments/bench_engines_accept.py \\
        [--out DIR] [--minutes 9] [--md experiments/results/bench_engines_accept.md] [--tasks a,b]
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KINDS = ("torch", "torch_compile", "ort", "mnn")
DEFAULT_OUT = ROOT / "experiments" / "out" / "bench_engines_accept"
# short timing: the sweep asks "does the baseline run and agree", not "how fast"
SHORT = ["evaluator.timing_budget_s=1.0", "evaluator.max_pairs=5", "evaluator.min_pairs=2",
         "evaluator.seeds=[0]", "evaluator.timeout_s=420"]


def status(r: dict) -> str:
    if r.get("error_kind") == "baseline_unsupported":
        return "unsupported"
    if r.get("correct") and r.get("t_baseline_s"):
        return "ok"
    return "failed"


def evaluate(task_id: str, kind: str) -> dict:
    from benchmark.judge import Evaluator
    from benchmark.task import resolve
    from leka.core.config import load_config

    cfg = load_config([], [f"baseline.kind={kind}", *SHORT])
    t0 = time.time()
    res = Evaluator(cfg.evaluator, "llvm", cfg.baseline).evaluate(resolve(task_id))
    row = {"task": task_id, "kind": kind, "correct": res.correct, "error_kind": res.error_kind,
           "error": (res.error or "")[:600], "speedup": res.speedup, "lo": res.speedup_lo, "hi": res.speedup_hi,
           "t_candidate_s": res.t_candidate_s, "t_baseline_s": res.t_baseline_s,
           "baseline_name": res.extra.get("baseline_name", kind), "timer": res.extra.get("timer"),
           "wall_s": round(time.time() - t0, 1)}
    row["status"] = status(row)
    return row


def versions() -> str:
    from benchmark.engines import version

    return ", ".join(f"{d} {version(d)}" for d in ("torch", "onnxruntime", "onnx", "MNN", "apache-tvm"))


def machine() -> str:
    from experiments.bench_vs_engines import machine as described

    return described()


def _cell(r: dict | None) -> str:
    if r is None:
        return "-"
    if r["status"] == "ok":
        sp = f"{r['speedup']:.2f}x" if r.get("speedup") else "ok"
        note = f" ({r['error_kind']})" if r.get("error_kind") else ""
        return f"ok, {sp}{note}"
    reason = (r.get("error") or "").replace("|", "/").replace("\n", " ")[:140]
    return f"**{r['status']}** ({r.get('error_kind')}): {reason}"


def table(rows: list[dict], tasks: list[str]) -> str:
    by = {(r["task"], r["kind"]): r for r in rows}
    names = {r["kind"]: r.get("baseline_name", r["kind"]) for r in rows}
    out = ["# Engine baselines on the llvm subset (issue 29 acceptance)\n",
           f"- date: {datetime.date.today().isoformat()} (UTC); machine: {machine()}",
           f"- versions: {versions()}",
           "- each cell: one evaluation of the task's root (untuned TVM) against the baseline, "
           "`experiments/bench_engines_accept.py` (short timing: " + ", ".join(SHORT) + "); "
           "the speedup is the root's over the baseline, information only (not a timing benchmark); "
           "`timing_invalid` means the baseline ran and agreed but the interval was wider than the bound",
           "- baselines: " + "; ".join(f"`{k}` = {names.get(k, k)}" for k in KINDS), ""]
    counts = {k: {s: sum(1 for t in tasks if (by.get((t, k)) or {}).get("status") == s)
                  for s in ("ok", "unsupported", "failed")} for k in KINDS}
    out.append("| engine | ok | unsupported (reason row) | failed |")
    out.append("|---|---|---|---|")
    for k in KINDS:
        c = counts[k]
        out.append(f"| {k} | {c['ok']}/{len(tasks)} | {c['unsupported']} | {c['failed']} |")
    out += ["", "| task | " + " | ".join(KINDS) + " |", "|---" * (len(KINDS) + 1) + "|"]
    for t in tasks:
        out.append(f"| {t} | " + " | ".join(_cell(by.get((t, k))) for k in KINDS) + " |")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--minutes", type=float, default=9.0, help="start no evaluation after this many minutes")
    ap.add_argument("--md", type=Path, default=None, help="write the markdown table here too")
    ap.add_argument("--tasks", default="", help="comma-separated task ids (default: the 23 llvm subset tasks)")
    ap.add_argument("--kinds", default=",".join(KINDS))
    args = ap.parse_args()
    from benchmark.subsets import load_subset

    tasks = [t for t in args.tasks.split(",") if t] or load_subset("subset69", "llvm")
    kinds = [k for k in args.kinds.split(",") if k]
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "rows.jsonl"
    rows = [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()] if path.exists() else []
    done = {(r["task"], r["kind"]) for r in rows}
    t0 = time.time()
    for t in tasks:
        for k in kinds:
            if (t, k) in done:
                continue
            if time.time() - t0 > args.minutes * 60:
                print(f"stopping after {args.minutes:g} minutes; run again to go on", flush=True)
                break
            try:
                r = evaluate(t, k)
            except Exception as e:  # noqa: BLE001 - the sweep records a crash of the harness as a row too
                r = {"task": t, "kind": k, "status": "failed", "error_kind": "harness",
                     "error": f"{type(e).__name__}: {e}"[:600]}
            rows.append(r)
            with path.open("a") as f:
                f.write(json.dumps(r) + "\n")
            print(f"{t:34s} {k:14s} {r['status']:11s} {r.get('wall_s', '-')}s {(r.get('error') or '')[:100]}",
                  flush=True)
        else:
            continue
        break
    md = table(rows, tasks)
    print(md)
    if args.md:
        args.md.write_text(md)


if __name__ == "__main__":
    main()
