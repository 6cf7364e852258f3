"""Check every EdgeKernelBench task end to end with the untuned TVM default lowering.

For each task: build the seeded model and inputs, torch.export + Relax import, the lifted module's
TVMScript parsed back (`round_trip`: structurally equal, so an agent's text edit starts from the exact
module), its structural hash (`shash`: weights lifted out, so two tasks with one hash are the same
computation), lower with the "zero" pipeline for the backend's target (DLight default schedules on a
GPU), build, run once, compare against PyTorch, time one call of each, and the suite's bounds
(`within_bounds`: inputs + parameters <= 64 / 64 / 256 MiB and untuned time <= 0.3 / 0.3 / 2 s per
call at Levels 1 / 2 / 3). A task passes (`ok`) when all of these hold and no other task of the table
has its hash. Each task runs in a child process so a crash (or a TVM abort) costs one row, not the table.

    python -m experiments.check_tasks                # every task, llvm
    python -m experiments.check_tasks --level 3 --jobs 2
    python -m experiments.check_tasks --ids l1_relu6,l2_se_block
    python -m experiments.check_tasks --backend opencl   # the tasks of the backend's domain (aiot)
    python -m experiments.check_tasks --hash-only        # import, round trip and hash only (no build)

Writes experiments/out/check_tasks[_BACKEND].json (merged with rows of earlier runs for tasks not
re-checked; llvm keeps the old name, which benchmark/subsets/make_subset.py reads).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

OUT = ROOT / "experiments" / "out" / "check_tasks.json"
CAP_MIB = {1: 64, 2: 64, 3: 256}  # benchmark/tasks/README.md, "Size caps"
CAP_MS = {1: 300.0, 2: 300.0, 3: 2000.0}  # and "Time caps" (untuned default lowering, 2-core CPU)


def out_path(backend: str) -> Path:
    return OUT if backend == "llvm" else OUT.with_name(f"check_tasks_{backend}.json")


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


def check_one(task_id: str, backend: str = "llvm", hash_only: bool = False) -> dict[str, Any]:
    """One row of the table; every failure is recorded as data."""
    import torch

    from benchmark.task import resolve
    from leka import tvm_adapter as A

    torch.set_num_threads(1)
    row: dict[str, Any] = {"id": task_id, "backend": backend, "import_ok": False, "build_ok": False,
                           "correct": False}
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
        _round_trip(row, mod)
        if hash_only:
            return row
        outs = _tvm_outputs(row, mod, inputs, backend)
        _compare(row, outs, ref, task)
        _bounds(row)
    except Exception as e:  # noqa: BLE001 - a row, not a crash
        row["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:300] if str(e).strip() else ''}"
        row["trace"] = traceback.format_exc()[-1500:]
    return row


def _round_trip(row: dict[str, Any], mod) -> None:
    """The lifted module's text parses back to a structurally equal module (`round_trip`), and its
    structural hash (`shash`): constants are lifted to parameters, so the hash is the computation's
    (ops, shapes, dtypes), not its weights'."""
    from leka import tvm_adapter as A

    lifted, _ = A.lift_consts(mod)
    try:
        row["round_trip"] = bool(A.structural_equal(A.parse_module(A.relax_text(lifted)), lifted))
    except Exception as e:  # noqa: BLE001 - a printer / parser gap is the finding
        row["round_trip"] = False
        row["round_trip_error"] = f"{type(e).__name__}: {A.first_line(e)}"[:300]
    row["shash"] = A.structural_hash(lifted)


def _bounds(row: dict[str, Any]) -> None:
    """The suite's size and time caps for the row's level (`within_bounds`, and why not). The time cap is
    the llvm lowering's on a 2-core CPU; a GPU backend's row (PoCL emulates one on the CPU) keeps the size cap."""
    lv = row.get("level") or 1
    over = []
    if row.get("mib", 0.0) > CAP_MIB[lv]:
        over.append(f"{row['mib']:.1f} MiB > {CAP_MIB[lv]}")
    timed_cap = row.get("backend", "llvm") == "llvm"
    if timed_cap and row.get("untuned_ms") is not None and row["untuned_ms"] > CAP_MS[lv]:
        over.append(f"untuned {row['untuned_ms']:.0f} ms > {CAP_MS[lv]:.0f}")
    row["within_bounds"] = not over
    if over:
        row["bounds"] = "; ".join(over)


def passed(row: dict[str, Any]) -> bool:
    """Every check of the row (the duplicate check is the table's: `mark_duplicates`)."""
    return bool(row.get("import_ok") and row.get("round_trip") and row.get("correct")
                and row.get("within_bounds") and not row.get("duplicate_of"))


def mark_duplicates(rows: list[dict[str, Any]]) -> None:
    """`duplicate_of` on every row whose structural hash another row of the table has."""
    by_hash: dict[str, list[str]] = {}
    for r in rows:
        if r.get("shash"):
            by_hash.setdefault(r["shash"], []).append(r["id"])
    for r in rows:
        others = [i for i in by_hash.get(r.get("shash") or "", []) if i != r["id"]]
        if others:
            r["duplicate_of"] = others
        else:
            r.pop("duplicate_of", None)


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


def _tvm_outputs(row: dict[str, Any], mod, inputs, backend: str = "llvm") -> list:
    """The imported module built untuned for the backend (this CPU for llvm; DLight's default GPU
    schedules otherwise) and run once (its build time and time per call into the row)."""
    from leka import tvm_adapter as A

    target = A.cpu_target() if backend == "llvm" else A.make_target(backend)
    t0 = time.perf_counter()
    ex = A.build(A.lower(mod, target), target)
    row["build_ok"] = True
    row["build_s"] = round(time.perf_counter() - t0, 2)
    runner = A.VMRunner(ex, A.device_for(backend))
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
    why = row.get("error") or row.get("bounds") or row.get("round_trip_error") or ""
    return (f"{row['id']:<40} {row.get('level', '-')!s:>2} {'y' if row['import_ok'] else 'N':>4} "
            f"{'y' if row.get('round_trip') else 'N':>3} {'y' if row['correct'] else 'N':>4} {err:>8} "
            f"{f('untuned_ms', 9)} {f('torch_ms', 8, 2)} {f('mib', 7, 2)} {row.get('ref_absmax', 0.0):8.1e}  "
            f"{why[:90]}")


def _died(i: str, e: BaseException) -> dict[str, Any]:
    return {"id": i, "import_ok": False, "build_ok": False, "correct": False,
            "error": f"child process died: {type(e).__name__}: {e}"}


def run_all(ids: list[str], jobs: int, backend: str = "llvm", hash_only: bool = False,
            on_row: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Rows in `ids` order. Workers are reused (importing torch + TVM costs seconds per process); if one
    crashes the pool breaks, and every task without a row is re-run alone in a fresh process. `on_row`
    gets each row as it is printed (the output file keeps it, so a run cut off resumes from there)."""
    on_row = on_row or (lambda row: None)
    ctx = mp.get_context("spawn")  # a forked child would inherit the parent's torch/TVM thread pools
    done: dict[str, dict[str, Any]] = {}
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=ctx) as pool:
        futs = {i: pool.submit(check_one, i, backend, hash_only) for i in ids}
        for i, fut in futs.items():
            try:
                done[i] = fut.result()
            except BrokenProcessPool:
                break
            print(_fmt(done[i]), flush=True)
            on_row(done[i])
    for i in (i for i in ids if i not in done):
        with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as solo:
            try:
                done[i] = solo.submit(check_one, i, backend, hash_only).result()
            except Exception as e:  # noqa: BLE001 - this task kills its process (segfault, abort)
                done[i] = _died(i, e)
        print(_fmt(done[i]), flush=True)
        on_row(done[i])
    return [done[i] for i in ids]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--level", type=int, default=None)
    ap.add_argument("--ids", default="", help="comma-separated task ids")
    ap.add_argument("--backend", default="llvm", help="llvm | cuda | opencl (default: the tasks of its domain)")
    ap.add_argument("--hash-only", action="store_true", help="import, round trip and hash only: no build")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", default="")
    ap.add_argument("--md", default="", help="only write the markdown table of --out's rows to this file")
    ap.add_argument("--resume", action="store_true",
                    help="skip tasks that already have a row in the output file (a run cut off goes on)")
    args = ap.parse_args(argv)
    if args.md:  # only renders what --out holds: no task is selected or run
        out = Path(args.out) if args.out else out_path(args.backend)
        Path(args.md).write_text(render_md(json.loads(out.read_text())["tasks"], args.backend, argv))
        return 0

    from benchmark.task import select

    if args.ids:
        ids = [s.strip() for s in args.ids.split(",") if s.strip()]
    else:
        # llvm checks every task (the CPU runs them all; make_subset reads its table), a GPU backend the
        # tasks of its domain (cuda: robotics, opencl: aiot)
        ids = [t.id for t in select(level=args.level, backend=None if args.backend == "llvm" else args.backend)]
    print(f"{'id':<40} {'L':>2} {'imp':>4} {'rt':>3} {'ok':>4} {'max_err':>8} {'tvm_ms':>9} {'torch_ms':>8} "
          f"{'MiB':>7} {'|ref|max':>8}  error", flush=True)
    out = Path(args.out) if args.out else out_path(args.backend)
    if args.resume and out.exists():
        done = {r["id"] for r in json.loads(out.read_text()).get("tasks", [])}
        ids = [i for i in ids if i not in done]
    rows = run_all(ids, args.jobs, args.backend, args.hash_only,
                   on_row=lambda row: _merge(out, [row], marks=False))
    table = _merge(out, rows)
    return _summary(rows, table, out, args.hash_only)


def _merge(out: Path, rows: list[dict[str, Any]], marks: bool = True) -> list[dict[str, Any]]:
    """The rows merged into the file's table (a task's newest row wins; a hash-only row keeps the
    earlier full row's build results), duplicates marked over the whole table; written back."""
    out.parent.mkdir(parents=True, exist_ok=True)
    merged: dict[str, dict[str, Any]] = {}
    if out.exists():
        try:
            merged = {r["id"]: r for r in json.loads(out.read_text()).get("tasks", [])}
        except (json.JSONDecodeError, KeyError):
            merged = {}
    for r in rows:
        merged[r["id"]] = {**merged.get(r["id"], {}), **r} if "untuned_ms" not in r else r
    table = sorted(merged.values(), key=lambda r: r["id"])
    if marks:
        mark_duplicates(table)
    tmp = out.with_suffix(".tmp")  # a kill mid-write leaves the previous file whole
    tmp.write_text(json.dumps({"tasks": table}, indent=1))
    tmp.replace(out)
    return table


def render_md(rows: list[dict[str, Any]], backend: str, argv: list[str] | None) -> str:
    """The committed form of a check: machine, versions, date, counts, one line per task."""
    import datetime
    import platform
    import sys

    import torch
    import tvm

    from profilers.calibrate import cpu_model

    flags = open("/proc/cpuinfo").read()
    cpu_brief = (f"{cpu_model()}, {os.cpu_count()} cores, "
                 f"{'AVX-512' if ' avx512f' in flags else 'AVX2' if ' avx2' in flags else 'no AVX2'}")
    n_ok = sum(passed(r) for r in rows)
    lv = {k: sum(1 for r in rows if r.get("level") == k) for k in (1, 2, 3)}
    head = [f"# check_tasks on {backend}: {n_ok} / {len(rows)} pass every check", "",
            f"- {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; {cpu_brief}; "
            f"Python {platform.python_version()}, torch {torch.__version__}, apache-tvm {tvm.__version__}",
            f"- Rows: `python -m experiments.check_tasks --backend {backend} --jobs 2` "
            f"(rendered by `{' '.join(['python -m experiments.check_tasks', *(argv or sys.argv[1:])])}`)",
            f"- Tasks by level: {lv[1]} / {lv[2]} / {lv[3]}; checks as the module's docstring says (import, exact "
            "round trip, correct at the task's tolerance, suite bounds, no duplicate hash)",
            f"- Failing: {', '.join(r['id'] for r in rows if not passed(r)) or 'none'}", "",
            "| task | L | round trip | correct | max err | untuned ms | torch ms | MiB | duplicate of |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        def f(k: str, nd: int = 1, r: dict[str, Any] = r) -> str:
            return "-" if r.get(k) is None else f"{r[k]:.{nd}f}"

        head.append(f"| {r['id']} | {r.get('level', '-')} | {'y' if r.get('round_trip') else 'N'} | "
                    f"{'y' if r.get('correct') else 'N'} | "
                    f"{'-' if r.get('max_err') is None else format(r['max_err'], '.1e')} | {f('untuned_ms')} | "
                    f"{f('torch_ms', 2)} | {f('mib', 2)} | {', '.join(r.get('duplicate_of') or []) or '-'} |")
    return "\n".join(head) + "\n"


def _summary(rows: list[dict[str, Any]], table: list[dict[str, Any]], out: Path, hash_only: bool) -> int:
    by_id = {r["id"]: r for r in table}
    rows = [by_id[r["id"]] for r in rows]  # with the table's duplicate marks
    n = len(rows)
    n_imp = sum(r["import_ok"] for r in rows)
    n_rt = sum(bool(r.get("round_trip")) for r in rows)
    n_ok = sum(passed(r) for r in rows)
    print(f"\n{n} tasks: {n_imp} import, {n_rt} round-trip exactly"
          + ("" if hash_only else f", {n_ok} pass every check") + f"; wrote {out}")
    slow = sorted((r for r in rows if r.get("untuned_ms") is not None), key=lambda r: -r["untuned_ms"])[:8]
    if slow:
        print("slowest untuned: " + ", ".join(f"{r['id']} {r['untuned_ms']:.0f} ms" for r in slow))
    bad = [r for r in rows if not (r["import_ok"] and r.get("round_trip") and not r.get("duplicate_of")
                                   if hash_only else passed(r))]
    for r in bad:
        why = (r.get("error") or r.get("bounds") or r.get("round_trip_error")
               or (f"same computation as {', '.join(r['duplicate_of'])}" if r.get("duplicate_of") else None)
               or ("round trip not exact" if not r.get("round_trip") else f"max_err {r.get('max_err')}"))
        print(f"FAIL {r['id']}: {why}")
    return 0 if not bad else 1


if __name__ == "__main__":
    raise SystemExit(main())
