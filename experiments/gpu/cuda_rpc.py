"""CUDA through TVM RPC (issue 45): `leka run --backend cuda --device rpc://127.0.0.1:PORT/KEY` with
the tracker and the board-side RPC server on the GPU machine itself, as a Jetson would be used
(docs/boards.md, "CUDA boards"): candidates are built on the host (CUDA C for `--arch`, host code for
the board's CPU), uploaded, checked over the seeds and timed in interleaved pairs by the board's RPC
server on its GPU; a lost board is one failed evaluation.

    python experiments/gpu/cuda_rpc.py --out experiments/results/cuda_rpc_h200.md
    python experiments/gpu/cuda_rpc.py --tasks l1_mish --budget 60 --max-evals 3

One `leka run` per task, one after the other (one GPU, one board). Prints and writes a markdown table:
Compile@1 / Correct@1 of the root, the best node's correctness and speedup against DLight, the
evaluations and the wall time; each run folder stays under `--runs`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

TASKS = ("l1_mish", "l1_rmsnorm", "l2_conv3x3_bn_relu")  # three CUDA subset tasks (subset69)


def run_task(task: str, url: str, runs: Path, budget_s: int, max_evals: int, arch: str) -> dict:
    out = runs / task
    cmd = [sys.executable, "-m", "leka.cli", "run", "--task", task, "--backend", "cuda", "--device", url,
           "--budget", f"{budget_s}s", "--max-evals", str(max_evals), "--quiet", "--out", str(out)]
    if arch:
        cmd += ["--set", f"device.target={json.dumps({'arch': arch})}"]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))},
                       timeout=budget_s + 900)
    row = {"task": task, "rc": r.returncode, "wall_s": round(time.monotonic() - t0, 1)}
    summaries = sorted(out.glob("*/summary.json"))
    if r.returncode != 0 or not summaries:
        row["error"] = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no summary"]
        return row
    s = json.loads(summaries[-1].read_text())
    from candidate_tree import Tree

    tree = Tree(Path(s["run_dir"]))
    try:
        nodes = [n for n in tree.nodes() if n.result is not None]
        root = min(nodes, key=lambda n: n.id) if nodes else None
        row.update(root_compiled=bool(root and root.result.compiled), root_correct=bool(root and root.result.correct),
                   correct_nodes=sum(n.result.correct for n in nodes), nodes=len(nodes),
                   device=(root.result.extra.get("device") if root else None),
                   errors=sorted({n.result.error_kind for n in nodes if n.result.error_kind}))
    finally:
        tree.close()
    row.update(best_correct=s["best_correct"], best_speedup=s.get("best_speedup"),
               best_lo=s.get("best_speedup_lo"), best_hi=s.get("best_speedup_hi"), evaluations=s["evaluations"],
               run_dir=s["run_dir"])
    return row


def table(rows: list[dict], meta: dict) -> str:
    lines = [f"# CUDA through TVM RPC ({meta['date']})", "",
             f"Machine {meta['machine']}, GPU {meta['gpu']}, TVM {meta['tvm']}; tracker and board-side "
             f"`rpc_server` on this machine, `leka run --backend cuda --device {meta['url']}` (rule policy, "
             f"budget {meta['budget_s']} s, at most {meta['max_evals']} evaluations). Speedups are against "
             "DLight's default schedules, both timed by the board (`time_evaluator` over RPC).", "",
             "| task | root compiled | root correct | correct nodes | best correct | best speedup | evaluations | wall s | device |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['task']} | error: {r['error'][0][:80]} | | | | | | {r['wall_s']} | |")
            continue
        sp = (f"{r['best_speedup']:.2f}x [{r['best_lo']:.2f}, {r['best_hi']:.2f}]"
              if r.get("best_speedup") and r.get("best_lo") else "n/a")
        lines.append(f"| {r['task']} | {r['root_compiled']} | {r['root_correct']} | {r['correct_nodes']}/{r['nodes']} | "
                     f"{r['best_correct']} | {sp} | {r['evaluations']} | {r['wall_s']} | {r['device']} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--budget", type=int, default=120, help="seconds per run")
    ap.add_argument("--max-evals", type=int, default=6)
    ap.add_argument("--arch", default="", help="CUDA arch of the board (default: the cuda backend's, sm_90)")
    ap.add_argument("--key", default="cuda")
    ap.add_argument("--runs", default="runs/cuda_rpc")
    ap.add_argument("--out", default="", help="markdown file for the table")
    ap.add_argument("--json", default="", help="JSON rows")
    a = ap.parse_args()

    from leka import tvm_adapter as A
    from leka.ir import remote

    runs = Path(a.runs)
    runs.mkdir(parents=True, exist_ok=True)
    with remote.start_tracker() as tr:
        srv = remote.start_server(tracker=(tr.host, tr.port), key=a.key)
        try:
            url = f"rpc://{tr.host}:{tr.port}/{a.key}"
            if not remote.request(tr.host, tr.port, a.key, timeout_s=120).cuda(0).exist:
                raise SystemExit("the board-side RPC server sees no CUDA device")
            rows = []
            for t in filter(None, a.tasks.split(",")):
                rows.append(run_task(t, url, runs, a.budget, a.max_evals, a.arch))
                print(json.dumps(rows[-1]), flush=True)
        finally:
            srv.stop()
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip().splitlines()[:1]
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.node() or "?",
            "gpu": gpu[0] if gpu else "?", "tvm": A.tvm_version(), "url": "rpc://127.0.0.1:PORT/" + a.key,
            "budget_s": a.budget, "max_evals": a.max_evals}
    md = table(rows, meta)
    print(md)
    if a.out:
        Path(a.out).write_text(md)
    if a.json:
        Path(a.json).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    return 0 if rows and all(r.get("best_correct") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
