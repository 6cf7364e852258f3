"""Which tasks of the suite have a degenerate reference (issue 43): an output all zero or near constant
(its mean within the task's tolerance of every element, `benchmark.judge.audit.degenerate`), so a kernel
that returns a constant passes the check and the task cannot tell computing from not computing.

Cheap by design: the PyTorch model of each task on its seed-0 inputs on the CPU (the reference an
llvm evaluation computes), no TVM. One process; a task that fails to run is a row with its error.

    python -m experiments.check_degenerate_refs                 # the whole suite (186 tasks)
    python -m experiments.check_degenerate_refs --backend llvm  # the tasks of llvm's domain
    python -m experiments.check_degenerate_refs --ids l1_relu6 --out /tmp/x.md

Writes experiments/results/degenerate_refs.md (machine, versions, date, the degenerate tasks, then
every task's output range).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "experiments" / "results" / "degenerate_refs.md"


def check(task) -> dict[str, Any]:
    """One task's seed-0 reference: its verdict and each output's range and spread."""
    import torch

    from benchmark.judge import degenerate, flat_outputs

    t0 = time.perf_counter()
    try:
        model = task.make_model()
        with torch.no_grad():
            outs = flat_outputs(model(*task.make_inputs(0)))
    except Exception as e:  # noqa: BLE001 - one task's failure is its row
        return {"task": task.id, "level": task.level, "error": f"{type(e).__name__}: {str(e)[:120]}"}
    stats = []
    for o in outs:
        x = np.asarray(o, dtype=np.float64).reshape(-1) if o.size else np.zeros(0)
        stats.append((tuple(o.shape), float(np.abs(x).max()) if x.size else 0.0, float(x.std()) if x.size else 0.0))
    return {"task": task.id, "level": task.level, "domains": ",".join(sorted(task.domains)), "verdict": degenerate(outs, task.atol, task.rtol),
            "outputs": stats, "tol": (task.atol, task.rtol), "s": time.perf_counter() - t0}


def header() -> list[str]:
    import torch

    from profilers.calibrate import cpu_model

    return [f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
            f"- machine: {cpu_model()}, {len(os.sched_getaffinity(0))} cores, {platform.platform()}",
            f"- versions: Python {platform.python_version()}, torch {torch.__version__}, numpy {np.__version__}",
            "- what: each task's PyTorch model on its seed-0 inputs, on the CPU (benchmark/task.py select()); "
            "degenerate = an output all zero, or near constant: its mean within the task's tolerance "
            "(atol + rtol |x|) of every element, so a constant output passes the check "
            "(benchmark/judge/audit.py degenerate; the judge marks such evaluations for audit)"]


def render(rows: list[dict[str, Any]], wall_s: float) -> str:
    bad = [r for r in rows if r.get("verdict")]
    err = [r for r in rows if r.get("error")]
    lines = ["# Degenerate references (issue 43)", "", *header(),
             f"- {len(rows)} tasks in {wall_s:.0f} s: {len(bad)} degenerate, {len(err)} failed to run", "",
             "## Degenerate tasks", "", "| task | level | verdict | outputs (shape, max abs, std) |", "|---|---|---|---|"]
    for r in bad:
        lines.append(f"| {r['task']} | {r['level']} | {r['verdict']} | {_outs(r)} |")
    if not bad:
        lines.append("| (none) | | | |")
    near = sorted((min(sd for _, _, sd in r["outputs"]), r["task"]) for r in rows if r.get("outputs"))[:3]
    lines += ["", "Closest to constant (the smallest standard deviation of an output, against tolerances of "
              "1e-4): " + ", ".join(f"{t} {sd:.3g}" for sd, t in near)]
    lines += ["", "## Every task", "", "| task | level | domains | verdict | outputs (shape, max abs, std) | s |",
              "|---|---|---|---|---|---|"]
    for r in rows:
        v = r.get("error") or r.get("verdict") or "ok"
        lines.append(f"| {r['task']} | {r['level']} | {r.get('domains', '')} | {v} | {_outs(r)} | {r.get('s', 0):.2f} |")
    return "\n".join(lines) + "\n"


def _outs(r: dict[str, Any]) -> str:
    return "; ".join(f"{list(s)} {m:.3g} {sd:.3g}" for s, m, sd in r.get("outputs", []))


def main(argv: list[str] | None = None) -> None:
    import torch

    from benchmark.task import resolve, select

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ids", default="", help="comma-separated task ids (default: the whole suite)")
    ap.add_argument("--backend", default=None, help="only the tasks of this backend's domain (llvm, cuda, ...)")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    tasks = [resolve(i) for i in a.ids.split(",") if i] if a.ids else select(backend=a.backend)
    t0 = time.perf_counter()
    rows = []
    for i, t in enumerate(tasks, 1):
        rows.append(check(t))
        print(f"[{i}/{len(tasks)}] {t.id}: {rows[-1].get('error') or rows[-1].get('verdict') or 'ok'}", flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(render(rows, time.perf_counter() - t0))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
