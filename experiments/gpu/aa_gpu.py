"""Issue 27: A-vs-A of the GPU time steps. Every subset69 task's untouched root against untuned TVM
(DLight: the same program on both arms) under each protocol of each backend, one evaluation each,
with the speedup's interval (benchmark/judge/stats.py). A task passes when its A/A speedup is within
[0.97, 1.03] or its interval contains 1.

Groups (`--groups`, in priority order: the queue is drained in that order; `GROUP@N`: its first N tasks):
  BACKEND:after    sandboxed worker (evaluator.sandbox = true, the default)
  BACKEND:before   in the evaluation process (evaluator.sandbox = false)
  BACKEND:before0  in-process with evaluator.warmup = 0: the samples planned from each arm's first call
                   (the protocol before issue 27's fix), to show the cause of the OpenCL bias

    python3 experiments/gpu/aa_gpu.py run --out DIR --rows ROWS.jsonl [--groups cuda:after,opencl:after,...]
        [--shards 6] [--deadline-s 300] [--tasks N] [--ready opencl=FILE]
    python3 experiments/gpu/aa_gpu.py render --rows ROWS.jsonl [--md OUT.md] [--json OUT.json]

`run` starts `--shards` processes, each taking the next unclaimed job of the queue (a job waits while
its backend's `--ready` file is missing: the OpenCL plugin still building); evaluations overlap their
builds and take the GPU one at a time (LEKA_GPU_LOCK, held by CUDA and OpenCL evaluations for checks
and timing). Each finished job is one line of ROWS.jsonl at once, so a cut-off call keeps what ran.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

BAND = (0.97, 1.03)
GROUPS = "cuda:after,opencl:after,opencl:before,opencl:before0@8,cuda:before"
PROTOCOLS = {"after": {"sandbox": True}, "before": {"sandbox": False}, "before0": {"sandbox": False, "warmup": 0}}
LABEL = {"after": "sandboxed", "before": "in-process", "before0": "in-process, warmup=0 (old plan)"}


def jobs(groups: list[str], limit: int = 0) -> list[tuple[str, str, str]]:
    from benchmark.subsets import load_subset

    out = []
    for g in groups:  # BACKEND:PROTOCOL[@N]: N = the group's first N tasks only
        g, _, n = g.partition("@")
        backend, proto = g.split(":")
        ids = list(load_subset("subset69", backend))
        n = min(int(n), limit or 10**6) if n else limit
        for tid in ids[:n] if n else ids:
            out.append((backend, proto, tid))
    return out


def verdict(row: dict) -> dict:
    s, lo, hi = row.get("speedup"), row.get("speedup_lo"), row.get("speedup_hi")
    band = s is not None and BAND[0] <= s <= BAND[1]
    inside = lo is not None and hi is not None and lo <= 1.0 <= hi
    return {"in_band": band, "interval_has_1": inside, "passed": bool(row.get("correct")) and (band or inside)}


def evaluate(backend: str, proto: str, tid: str, cache: str, timeout_s: float) -> dict:
    from benchmark.judge import Evaluator
    from benchmark.task import resolve
    from leka.core.config import EvaluatorConfig

    cfg = EvaluatorConfig(memory_cap_gb=16.0, timeout_s=timeout_s, **PROTOCOLS[proto])
    task = resolve(tid)
    t0 = time.time()
    r = Evaluator(cfg, backend, cache_dir=cache).evaluate(task, None)
    keep = ("number", "first_call_s", "plan_call_s", "timer", "machine_load", "sandbox", "timing_limited",
            "ci_level", "timing_input_sets")
    row = {"backend": backend, "protocol": proto, "task": tid, "level": task.level,
           "correct": r.correct, "compiled": r.compiled, "error_kind": r.error_kind,
           "error": (r.error or "")[:300] or None, "speedup": r.speedup, "speedup_lo": r.speedup_lo,
           "speedup_hi": r.speedup_hi, "n_pairs": r.n_pairs, "spread": r.timing_spread,
           "timing_valid": r.timing_valid, "t_candidate_s": r.t_candidate_s, "t_baseline_s": r.t_baseline_s,
           "wall_s": r.wall_s, "job_s": round(time.time() - t0, 1), "ended": time.strftime("%H:%M:%S", time.gmtime()),
           "extra": {k: r.extra[k] for k in keep if k in r.extra}}
    row.update(verdict(row))
    return row


def append(path: Path, row: dict) -> None:
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(json.dumps(row, default=str) + "\n")
        f.flush()
        fcntl.flock(f, fcntl.LOCK_UN)


def shard(args) -> None:
    queue = json.loads(Path(args.out, "queue.json").read_text())
    ready = dict(r.split("=", 1) for r in args.ready if r)
    claims = Path(args.out, "claims")
    cache = str(Path(args.out, f"cache{args.index}"))  # per shard: no two processes write one cache entry
    deadline = float(args.deadline)
    pending = [tuple(j) for j in queue]
    while pending:
        left = deadline - time.time()
        if left < args.min_left:
            return
        job = next((j for j in pending if j[0] not in ready or Path(ready[j[0]]).exists()), None)
        if job is None:
            time.sleep(1.0)
            continue
        pending.remove(job)
        try:
            (claims / "_".join(job)).mkdir()
        except FileExistsError:
            continue
        backend, proto, tid = job
        try:
            row = evaluate(backend, proto, tid, cache, min(args.job_timeout, max(30.0, left - 5)))
        except Exception as e:  # noqa: BLE001 - one job's failure is a row, the shard goes on
            row = {"backend": backend, "protocol": proto, "task": tid, "correct": False,
                   "error_kind": "script", "error": repr(e)[:300], "passed": False}
        row["shard"] = args.index
        append(Path(args.rows), row)
        v = "PASS" if row.get("passed") else "fail"
        s = row.get("speedup")
        print(f"[{row.get('ended', '')}] {backend}:{proto} {tid}: {v} "
              f"{s if s is None else round(s, 3)} [{row.get('speedup_lo')}, {row.get('speedup_hi')}] "
              f"{row.get('error_kind') or ''} n={row.get('extra', {}).get('number')} "
              f"first={row.get('extra', {}).get('first_call_s')} {row.get('job_s')}s", flush=True)


def run(args) -> None:
    out = Path(args.out)
    (out / "claims").mkdir(parents=True, exist_ok=True)
    queue = jobs([g for g in args.groups.split(",") if g], args.tasks)
    (out / "queue.json").write_text(json.dumps(queue))
    deadline = time.time() + args.deadline_s
    print(f"A/A: {len(queue)} jobs ({args.groups}), {args.shards} shards, deadline in {args.deadline_s:.0f}s, "
          f"started {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}", flush=True)
    procs = []
    for i in range(args.shards):
        cmd = [sys.executable, __file__, "shard", "--out", str(out), "--rows", args.rows, "--index", str(i),
               "--deadline", str(deadline), "--min-left", str(args.min_left), "--job-timeout", str(args.job_timeout),
               *sum((["--ready", r] for r in args.ready), [])]
        procs.append(subprocess.Popen(cmd, start_new_session=True))
        time.sleep(args.stagger)  # forkservers import torch + TVM: spread their starts a little
    for p in procs:
        try:
            p.wait(timeout=max(1.0, deadline - time.time() + 5))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # its own session: the shard and its evaluation children
            p.wait()
    done = len(Path(args.rows).read_text().splitlines()) if Path(args.rows).exists() else 0
    print(f"A/A: {done} of {len(queue)} jobs done at {time.strftime('%H:%M:%S UTC', time.gmtime())}", flush=True)


def summarise(rows: list[dict]) -> list[dict]:
    from benchmark.judge import geomean

    out = []
    for key in dict.fromkeys((r["backend"], r["protocol"]) for r in rows):
        rs = [r for r in rows if (r["backend"], r["protocol"]) == key]
        num = [r["extra"]["number"] for r in rs if r.get("extra", {}).get("number")]
        first = [r["extra"]["first_call_s"] for r in rs if r.get("extra", {}).get("first_call_s")]
        out.append({"backend": key[0], "protocol": key[1], "label": LABEL.get(key[1], key[1]), "tasks": len(rs),
                    "passed": sum(bool(r.get("passed")) for r in rs),
                    "in_band": sum(bool(r.get("in_band")) for r in rs),
                    "interval_has_1": sum(bool(r.get("interval_has_1")) for r in rs),
                    "errors": sum(bool(r.get("error_kind")) and not r.get("correct") for r in rs),
                    "geomean": geomean([r.get("speedup") for r in rs]),
                    "equal_call_counts": sum(n[0] == n[1] for n in num), "with_counts": len(num),
                    "median_first_call_ratio_base_over_cand": (statistics.median(f[1] / f[0] for f in first if f[0] > 0)
                                                               if first else None)})
    return out


def render(args) -> None:
    rows = [json.loads(x) for x in Path(args.rows).read_text().splitlines() if x.strip()]
    groups = list(dict.fromkeys((r["backend"], r["protocol"]) for r in rows))
    lines = []
    for backend in dict.fromkeys(g[0] for g in groups):
        protos = [p for b, p in groups if b == backend]
        lines += [f"### {backend}", "",
                  "| task | lvl | " + " | ".join(f"{LABEL.get(p, p)}: A/A [95% interval] pairs, calls/sample cand/base"
                                                  for p in protos) + " |",
                  "|---|---|" + "---|" * len(protos)]
        by = {(r["protocol"], r["task"]): r for r in rows if r["backend"] == backend}
        for tid in dict.fromkeys(r["task"] for r in rows if r["backend"] == backend):
            lvl = next(r.get("level", "") for r in rows if r["task"] == tid)
            cells = []
            for p in protos:
                r = by.get((p, tid))
                if r is None:
                    cells.append("not run")
                elif r.get("speedup") is None:
                    cells.append(f"error: {r.get('error_kind')}")
                else:
                    n = r.get("extra", {}).get("number") or ["?", "?"]
                    lo, hi = r.get("speedup_lo"), r.get("speedup_hi")
                    iv = f"[{lo:.3f}, {hi:.3f}]" if lo is not None else "[one pair]"
                    mark = "pass" if r.get("passed") else "**FAIL**"
                    err = f" ({r['error_kind']})" if r.get("error_kind") else ""
                    cells.append(f"{r['speedup']:.3f} {iv} {r.get('n_pairs')}p, {n[0]}/{n[1]}: {mark}{err}")
            lines.append(f"| {tid} | {lvl} | " + " | ".join(cells) + " |")
        lines.append("")
    summ = summarise(rows)
    lines += ["| backend | protocol | tasks run | pass (band or interval) | within [0.97, 1.03] | interval contains 1 "
              "| failed evaluations | geomean A/A | equal call counts | median first call base/cand |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for s in summ:
        g = f"{s['geomean']:.3f}" if s["geomean"] else "-"
        fr = s["median_first_call_ratio_base_over_cand"]
        lines.append(f"| {s['backend']} | {s['label']} | {s['tasks']} | **{s['passed']}/{s['tasks']}** | {s['in_band']} | "
                     f"{s['interval_has_1']} | {s['errors']} | {g} | {s['equal_call_counts']}/{s['with_counts']} | "
                     f"{fr if fr is None else round(fr, 2)} |")
    text = "\n".join(lines) + "\n"
    if args.md:
        Path(args.md).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summ, "rows": rows}, indent=1, default=str))
    print(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--rows", required=True)
    r.add_argument("--groups", default=GROUPS)
    r.add_argument("--shards", type=int, default=6)
    r.add_argument("--deadline-s", type=float, default=300.0)
    r.add_argument("--tasks", type=int, default=0, help="the first N subset tasks of each backend only")
    r.add_argument("--ready", action="append", default=[], help="BACKEND=FILE: its jobs wait for FILE")
    r.add_argument("--min-left", type=float, default=15.0, help="no new job with fewer seconds left")
    r.add_argument("--job-timeout", type=float, default=150.0)
    r.add_argument("--stagger", type=float, default=1.0)
    s = sub.add_parser("shard")
    for a in ("--out", "--rows", "--deadline"):
        s.add_argument(a, required=True)
    s.add_argument("--index", type=int, required=True)
    s.add_argument("--min-left", type=float, default=15.0)
    s.add_argument("--job-timeout", type=float, default=150.0)
    s.add_argument("--ready", action="append", default=[])
    d = sub.add_parser("render")
    d.add_argument("--rows", required=True)
    d.add_argument("--md", default=None)
    d.add_argument("--json", default=None)
    args = ap.parse_args()
    {"run": run, "shard": shard, "render": render}[args.cmd](args)


if __name__ == "__main__":
    main()
