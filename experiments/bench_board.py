"""LEKA on the 23 llvm tasks of subset69 on the emulated aarch64 board (issue 45): Compile@1 and
Correct@1, rule policy, short budget; times are the emulator's and marked so (never speedups).

    .venv/bin/python experiments/bench_board.py [--budget 3m] [--max-evals 4] [--tasks a,b] [--limit N]
    .venv/bin/python experiments/bench_board.py --table       # the markdown of the rows so far

Needs `make boards`. Starts its own emulated board (`leka.board.emulate`: a tracker and TVM's RPC
server under qemu-aarch64), then one `leka run --config board.yaml` per task, one after the other;
a board that died is started again before the next task. Resumable: each finished task appends one
JSON row to `--rows` (default experiments/results/bench_board_aarch64_emulated.jsonl) and a second
invocation skips the tasks it has; `--table` renders them (also written to the .md beside).

Per task: the root (untuned TVM for the board's CPU) compiled / correct on the board; the run's
answer (its best node) compiled / correct (Compile@1 / Correct@1), the nodes per level and how many
were checked correct, the answer's and the baseline's time on the board (qemu: emulated, not the
board's speed), the run's wall time.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "experiments" / "results"
DEFAULT_ROWS = RESULTS / "bench_board_aarch64_emulated.jsonl"


def _rows(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()] if path.is_file() else []


def run_task(task: str, cfg: Path, out: Path, budget: str, max_evals: int) -> dict:
    from benchmark.task import resolve
    from candidate_tree import Tree

    t0 = time.monotonic()
    row: dict = {"task": task, "level": resolve(task).level}
    r = subprocess.run([sys.executable, "-m", "leka.cli", "run", "--task", task, "--config", str(cfg),
                        "--budget", budget, "--max-evals", str(max_evals), "--quiet", "--out", str(out)],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    row["wall_s"], row["rc"] = round(time.monotonic() - t0, 1), r.returncode
    summaries = sorted(out.glob(f"{task}-*/summary.json"), key=lambda p: p.stat().st_mtime)
    if not summaries:  # the run itself failed (a run without a correct node still has its summary)
        tail = [ln for ln in (r.stderr or r.stdout).strip().splitlines() if "Warning" not in ln]
        row["error"] = tail[-1][:200] if tail else f"exit {r.returncode}"
        return row
    s = json.loads(summaries[-1].read_text())
    tree = Tree(Path(s["run_dir"]))
    try:
        nodes = [n for n in tree.nodes() if n.result is not None]
        root = next((n for n in nodes if n.level is None), None)
        best = tree.get(s["best_node"]) if s["best_node"] is not None else None
        rr, br = (root.result if root else None), (best.result if best else None)
        row.update(root_compiled=bool(rr and rr.compiled), root_correct=bool(rr and rr.correct),
                   root_error=None if rr and rr.correct else (rr.error_kind if rr else "no root"),
                   compiled=bool(br and br.compiled), correct=bool(s["best_correct"]),
                   best_level=best.level if best else None,
                   checked=len(nodes), checked_correct=sum(n.result.correct for n in nodes),
                   first_error=next((n.result.error for n in nodes if not n.result.correct), None),
                   errors=sorted({n.result.error_kind for n in nodes
                                  if n.result.error_kind and n.result.error_kind != "timing_invalid"}),
                   t_candidate_s=br.t_candidate_s if br else None, t_baseline_s=br.t_baseline_s if br else None,
                   timing_valid=bool(br and br.timing_valid), emulated=bool(br and br.extra.get("emulated")))
    finally:
        tree.close()
    row.update(nodes=s["nodes_by_level"], evals=s["evaluations"], run_dir=os.path.relpath(s["run_dir"], ROOT))
    return row


def _ms(t: float | None) -> str:
    return f"{t * 1e3:.3g}" if t else "-"


def table(rows: list[dict], meta: dict) -> str:
    lines = ["# LEKA on the emulated aarch64 board (subset69, llvm)", "",
             f"{meta.get('date', '?')}; host {meta.get('host', '?')}; board: TVM {meta.get('tvm', '?')} RPC server "
             f"under qemu-aarch64 {meta.get('qemu', '?')}, target `{json.dumps(meta.get('target', {}))}`, L2 C++ by "
             f"`{meta.get('cross_compiler', '?')}`. Rule policy, budget {meta.get('budget', '?')} and at most "
             f"{meta.get('max_evals', '?')} evaluations per task. **Times are the emulator's (marked emulated, "
             "timing_valid false): not the board's speed, not speedups.**", "",
             "| task | lvl | root compiled | root correct | compiled | correct | answer level | checked ok | "
             "L0/L1/L2 | t answer ms (emulated) | t baseline ms (emulated) | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['task']} | {r['level']} | error: {r['error'][:90]} | | | | | | | | | {r['wall_s']} |")
            continue
        nd = r["nodes"]
        rc = "yes" if r["root_correct"] else f"no ({r['root_error']})"
        if not r["root_correct"] and r.get("first_error"):
            rc += f": {r['first_error'][:80]}"
        lines.append(f"| {r['task']} | {r['level']} | {r['root_compiled']} | {rc} | {r['compiled']} | {r['correct']} | "
                     f"{r['best_level'] or 'root'} | {r['checked_correct']}/{r['checked']} | "
                     f"{nd['L0']}/{nd['L1']}/{nd['L2']} | {_ms(r['t_candidate_s'])} | {_ms(r['t_baseline_s'])} | "
                     f"{r['wall_s']} |")
    n = len(rows)
    c1 = sum(r.get("compiled", False) for r in rows)
    k1 = sum(r.get("correct", False) for r in rows)
    lines += ["", f"**Compile@1 {c1}/{n}, Correct@1 {k1}/{n}** over the {n} task(s) run so far "
              f"(of {meta.get('of', 23)})." if n else "No task run yet."]
    return "\n".join(lines) + "\n"


def _meta(args, board) -> dict:
    from leka import board as B
    from leka import tvm_adapter as A

    qemu = subprocess.run(["qemu-aarch64", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "host": f"{platform.machine()}, "
            f"{len(os.sched_getaffinity(0))} cores (shared)", "tvm": A.tvm_version(), "qemu": qemu.split()[-1] if qemu else "?",
            "target": B.ARCHES["aarch64"].target, "cross_compiler": B.ARCHES["aarch64"].cross_compiler,
            "budget": args.budget, "max_evals": args.max_evals, "of": 23}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="", help="comma list instead of the 23 llvm tasks of subset69")
    ap.add_argument("--budget", default="3m")
    ap.add_argument("--max-evals", type=int, default=4)
    ap.add_argument("--limit", type=int, default=0, help="run at most N tasks in this invocation")
    ap.add_argument("--rows", default=str(DEFAULT_ROWS))
    ap.add_argument("--out", default=str(ROOT / "runs" / "bench_board"))
    ap.add_argument("--table", action="store_true", help="render the rows so far and stop")
    args = ap.parse_args()
    rows_path = Path(args.rows)
    md_path = rows_path.with_suffix(".md")
    meta_path = rows_path.with_suffix(".meta.json")
    if args.table:
        md = table(_rows(rows_path), json.loads(meta_path.read_text()) if meta_path.is_file() else {})
        print(md)
        md_path.write_text(md)
        return 0

    from benchmark.subsets import load_subset
    from leka import board as B

    ids = [t for t in args.tasks.split(",") if t] or load_subset("subset69", "llvm")
    done = {r["task"] for r in _rows(rows_path)}
    todo = [t for t in ids if t not in done][: args.limit or None]
    print(f"{len(done)} task(s) done, {len(todo)} to run", flush=True)
    if not todo:
        return 0
    why = B.is_ready("aarch64")
    if why:
        print(why, file=sys.stderr)
        return 2
    board = B.emulate("aarch64", key="qemu-bench")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = out / "board.yaml"
    try:
        import yaml

        cfg.write_text(yaml.safe_dump({"backend": "llvm", "device": board.device()}))
        meta_path.write_text(json.dumps(_meta(args, board), indent=1))
        for i, t in enumerate(todo, 1):
            if not B._free(board.tracker, board.key) and not B._alive(board.server_pid):
                board.server_pid = B.start_server("aarch64", board.tracker, board.key)  # the board died: anew
            print(f"[{i}/{len(todo)}] {t} ...", flush=True)
            row = run_task(t, cfg, out, args.budget, args.max_evals)
            print(json.dumps(row), flush=True)
            with rows_path.open("a") as f:
                f.write(json.dumps(row) + "\n")
    finally:
        board.stop()
    md_path.write_text(table(_rows(rows_path), json.loads(meta_path.read_text())))
    print(md_path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
