"""Check every EdgeKernelBench task end to end with the untuned TVM default lowering.

For each task: build the seeded model and inputs, torch.export + Relax import, lower with the "zero"
pipeline for the local CPU, build, run once, compare against PyTorch and time one call of each.
Each task runs in its own child process so a crash (or a TVM abort) costs one row, not the table.

    python -m experiments.check_tasks                # all tasks
    python -m experiments.check_tasks --level 3 --jobs 2
    python -m experiments.check_tasks --ids l1_relu6,l2_se_block

Writes experiments/out/check_tasks.json (merged with rows of earlier runs for tasks not re-checked).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

OUT = ROOT / "experiments" / "out" / "check_tasks.json"


def footprint_mib(model: Any, inputs: list[Any]) -> float:
    """Inputs + parameters + buffers, in MiB (the edge-size cap of the suite)."""
    import torch

    n = sum(t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor))
    n += sum(p.numel() * p.element_size() for p in model.parameters())
    n += sum(b.numel() * b.element_size() for b in model.buffers())
    return n / 2**20


def _flat(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [y for o in out for y in _flat(o)]
    return [out]


def check_one(task_id: str) -> dict[str, Any]:
    """One row of the table; every failure is recorded as data."""
    import torch

    from benchmark.task import resolve
    from leka import tvm_adapter as A

    torch.set_num_threads(1)
    row: dict[str, Any] = {"id": task_id, "import_ok": False, "build_ok": False, "correct": False}
    try:
        task = resolve(task_id)
        row.update(level=task.level, domains=list(task.domains), atol=task.atol, rtol=task.rtol)
        model = task.make_model()
        inputs = task.make_inputs(0)
        row["mib"] = round(footprint_mib(model, inputs), 3)
        ref = _torch_reference(row, model, inputs)
        t0 = time.perf_counter()
        try:
            mod = A.import_torch(model, inputs)
        except A.ImportFailure as e:
            row["error"] = str(e)
            row["stage"] = "import"
            return row
        row["import_ok"] = True
        row["import_s"] = round(time.perf_counter() - t0, 2)
        outs = _tvm_outputs(row, mod, inputs)
        _compare(row, outs, ref, task)
    except Exception as e:  # noqa: BLE001 - a row, not a crash
        row["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:300] if str(e).strip() else ''}"
        row["trace"] = traceback.format_exc()[-1500:]
    return row


def _torch_reference(row: dict[str, Any], model, inputs) -> list:
    """PyTorch's outputs as numpy (and its time per call, its largest magnitude into the row)."""
    import numpy as np
    import torch

    with torch.no_grad():
        ref = [o.detach().numpy() for o in _flat(model(*inputs))]
        # a reference this small would pass any output under atol: flag it in the table
        row["ref_absmax"] = float(max((np.abs(r).max() for r in ref if r.size), default=0.0))
        t0 = time.perf_counter()
        for _ in range(3):
            model(*inputs)
        row["torch_ms"] = round((time.perf_counter() - t0) / 3 * 1e3, 3)
    return ref


def _tvm_outputs(row: dict[str, Any], mod, inputs) -> list:
    """The imported module built untuned for this CPU and run once (its build time and time per
    call into the row)."""
    from leka import tvm_adapter as A

    target = A.cpu_target()
    t0 = time.perf_counter()
    ex = A.build(A.lower(mod, target), target)
    row["build_ok"] = True
    row["build_s"] = round(time.perf_counter() - t0, 2)
    runner = A.VMRunner(ex, A.device_for("llvm"))
    arrays = [i.numpy() for i in inputs]
    t0 = time.perf_counter()
    outs = runner(*arrays)
    row["untuned_ms"] = round((time.perf_counter() - t0) * 1e3, 2)
    dev_args = runner.to_device(arrays)
    # best of three single calls: the machine is shared, so the minimum is the least noisy figure
    best = min(runner.time_per_call(dev_args, 1) for _ in range(2))
    row["untuned_ms"] = round(min(row["untuned_ms"], best * 1e3), 2)
    return outs


def _compare(row: dict[str, Any], outs: list, ref: list, task) -> None:
    """TVM's outputs against PyTorch's under the task's tolerances: the row's max_err and correct,
    or its error when the outputs do not even line up."""
    import numpy as np

    if len(outs) != len(ref):
        row["error"] = f"{len(outs)} outputs from TVM, {len(ref)} from torch"
        return
    errs, ok = [], True
    for o, r in zip(outs, ref, strict=True):
        if o.shape != r.shape:
            row["error"] = f"shape {o.shape} vs torch {r.shape}"
            return
        o64, r64 = o.astype(np.float64), r.astype(np.float64)
        errs.append(float(np.max(np.abs(o64 - r64))) if o.size else 0.0)
        ok = ok and bool(np.allclose(o64, r64, atol=task.atol, rtol=task.rtol))
    row["max_err"] = max(errs) if errs else 0.0
    row["correct"] = ok


def _fmt(row: dict[str, Any]) -> str:
    def f(k: str, w: int, nd: int = 1) -> str:
        v = row.get(k)
        return f"{'-':>{w}}" if v is None else f"{v:>{w}.{nd}f}" if isinstance(v, float) else f"{v!s:>{w}}"

    err = f"{row['max_err']:.1e}" if row.get("max_err") is not None else "-"
    return (f"{row['id']:<40} {row.get('level', '-')!s:>2} {'y' if row['import_ok'] else 'N':>4} "
            f"{'y' if row['correct'] else 'N':>4} {err:>8} {f('untuned_ms', 9)} {f('torch_ms', 8, 2)} "
            f"{f('mib', 7, 2)} {row.get('ref_absmax', 0.0):8.1e}  {row.get('error', '')[:90]}")


def _died(i: str, e: BaseException) -> dict[str, Any]:
    return {"id": i, "import_ok": False, "build_ok": False, "correct": False,
            "error": f"child process died: {type(e).__name__}: {e}"}


def run_all(ids: list[str], jobs: int) -> list[dict[str, Any]]:
    """Rows in `ids` order. Workers are reused (importing torch + TVM costs seconds per process); if one
    crashes the pool breaks, and every task without a row is re-run alone in a fresh process."""
    ctx = mp.get_context("spawn")  # a forked child would inherit the parent's torch/TVM thread pools
    done: dict[str, dict[str, Any]] = {}
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=ctx) as pool:
        futs = {i: pool.submit(check_one, i) for i in ids}
        for i, fut in futs.items():
            try:
                done[i] = fut.result()
            except BrokenProcessPool:
                break
            print(_fmt(done[i]), flush=True)
    for i in (i for i in ids if i not in done):
        with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as solo:
            try:
                done[i] = solo.submit(check_one, i).result()
            except Exception as e:  # noqa: BLE001 - this task kills its process (segfault, abort)
                done[i] = _died(i, e)
        print(_fmt(done[i]), flush=True)
    return [done[i] for i in ids]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--level", type=int, default=None)
    ap.add_argument("--ids", default="", help="comma-separated task ids")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)

    from benchmark.task import select

    if args.ids:
        ids = [s.strip() for s in args.ids.split(",") if s.strip()]
    else:
        ids = [t.id for t in select(level=args.level)]
    print(f"{'id':<40} {'L':>2} {'imp':>4} {'ok':>4} {'max_err':>8} {'tvm_ms':>9} {'torch_ms':>8} "
          f"{'MiB':>7} {'|ref|max':>8}  error", flush=True)
    rows = run_all(ids, args.jobs)

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    merged: dict[str, dict[str, Any]] = {}
    if out.exists():
        try:
            merged = {r["id"]: r for r in json.loads(out.read_text()).get("tasks", [])}
        except (json.JSONDecodeError, KeyError):
            merged = {}
    merged.update({r["id"]: r for r in rows})
    out.write_text(json.dumps({"tasks": sorted(merged.values(), key=lambda r: r["id"])}, indent=1))

    n = len(rows)
    n_imp = sum(r["import_ok"] for r in rows)
    n_ok = sum(r["correct"] for r in rows)
    print(f"\n{n} tasks: {n_imp} import, {n_ok} correct; wrote {out}")
    slow = sorted((r for r in rows if r.get("untuned_ms") is not None), key=lambda r: -r["untuned_ms"])[:8]
    if slow:
        print("slowest untuned: " + ", ".join(f"{r['id']} {r['untuned_ms']:.0f} ms" for r in slow))
    for r in rows:
        if not r["correct"]:
            print(f"FAIL {r['id']}: {r.get('error') or 'max_err ' + str(r.get('max_err'))}")
    return 0 if n_ok == n else 1


if __name__ == "__main__":
    raise SystemExit(main())
