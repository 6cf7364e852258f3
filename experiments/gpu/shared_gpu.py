"""Issue 27: one task's LEKA runs sharing one GPU, to find why `l2_qk_rope_scores` once ended with no
correct candidate while 12 runs shared the GPU (alone it was correct).

    python experiments/gpu/shared_gpu.py --out DIR [--task l2_qk_rope_scores] [--runs 12] [--budget 60s]
                                         [--modes lock,nolock] [--set k=v]

Per mode, `--runs` `leka run --backend cuda` of the task at once (seeds 0..N-1, so each has its own run
folder): `lock` as LEKA runs them (every check, profile and timing holds the GPU alone: one lock file,
benchmark/judge/gpu_timing.py), `nolock` with one lock file per run, so their checks and timings overlap on
the GPU as they did before the lock was fixed (the first CUDA table; cuda_subset_h200.md, "What changed
since the first table"). Per run: whether its root and best were correct, and every failed node's error
kind and first line, as JSON lines in DIR/rows.jsonl; a table of both modes on stdout.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def nodes(run_dir: Path) -> list[dict]:
    con = sqlite3.connect(run_dir / "tree.sqlite")
    try:
        rows = con.execute("SELECT id, parent, level, status, result FROM nodes ORDER BY id").fetchall()
    finally:
        con.close()
    out = []
    for nid, parent, level, status, result in rows:
        r = json.loads(result) if result else {}
        out.append({"id": nid, "parent": parent, "level": level, "status": status, "judged": bool(r),
                    "correct": r.get("correct"),
                    "error_kind": r.get("error_kind"), "error": (r.get("error") or "").splitlines()[0][:240]
                    if r.get("error") else ""})
    return out


def run_mode(mode: str, args) -> list[dict]:
    out = Path(args.out) / mode
    out.mkdir(parents=True, exist_ok=True)
    procs = []
    t0 = time.time()
    for i in range(args.runs):
        env = dict(os.environ)
        if mode == "nolock":
            env["LEKA_GPU_LOCK"] = f"/tmp/leka-gpu-nolock-{i}"
        cmd = [sys.executable, "-m", "leka.cli", "run", "--task", args.task, "--backend", "cuda", "--budget",
               args.budget, "--seed", str(i), "--out", str(out / f"s{i}"), "--quiet",
               *[x for s in args.set for x in ("--set", s)]]
        log = open(out / f"s{i}.log", "w")  # noqa: SIM115 - closed below, after the process ends
        procs.append((i, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env), log))
    rows = []
    for i, p, log in procs:
        rc = p.wait()
        log.close()
        d = next((x for x in sorted((out / f"s{i}").glob("*/")) if (x / "tree.sqlite").is_file()), None)
        row = {"mode": mode, "seed": i, "rc": rc, "wall_s": round(time.time() - t0, 1)}
        if d is not None:
            s = json.loads((d / "summary.json").read_text()) if (d / "summary.json").is_file() else {}
            ns = nodes(d)
            row.update(best_correct=s.get("best_correct"), best_speedup=s.get("best_speedup"),
                       evaluations=s.get("evaluations"), root_correct=ns[0]["correct"] if ns else None,
                       root_error=ns[0]["error"] if ns and not ns[0]["correct"] else "",
                       failed=[n for n in ns if n["judged"] and not n["correct"]])
        else:
            row["error"] = (out / f"s{i}.log").read_text()[-600:]
        rows.append(row)
        with open(Path(args.out) / "rows.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--task", default="l2_qk_rope_scores")
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--budget", default="60s")
    ap.add_argument("--modes", default="lock,nolock")
    ap.add_argument("--set", action="append", default=[])
    args = ap.parse_args()
    print("| mode | runs | best correct | root correct | failed nodes | error kinds |\n|---|---|---|---|---|---|")
    for mode in [m for m in args.modes.split(",") if m]:
        rows = run_mode(mode, args)
        kinds = collections.Counter(n["error_kind"] for r in rows for n in r.get("failed", []))
        print(f"| {mode} | {len(rows)} | {sum(bool(r.get('best_correct')) for r in rows)} "
              f"| {sum(bool(r.get('root_correct')) for r in rows)} | {sum(len(r.get('failed', [])) for r in rows)} "
              f"| {dict(kinds)} |", flush=True)
        for r in rows:
            for n in r.get("failed", [])[:3]:
                print(f"  {mode} s{r['seed']} #{n['id']} {n['level']}: {n['error_kind']}: {n['error']}", flush=True)


if __name__ == "__main__":
    main()
