"""Candidate-tree throughput: insert a 10,000-node tree (one transaction per node, with results and
two text artifacts each), then time the queries the search makes. Prints a table.

    python -m experiments.bench_tree [--nodes 10000] [--sync NORMAL FULL] [--reps 50]

Targets (issue 5): insert <= 10 s for 10,000 nodes; best-k and lineage <= 50 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from candidate_tree import Tree
from leka.core.levels import level_names
from leka.core.types import Edit, EvalResult

RELAX = "".join(f"    lv{i} = R.call_tir(cls.fused_op{i}, (lv{i - 1},), out_sinfo=R.Tensor((1, 64), 'float32'))\n"
                for i in range(1, 40))


def build(run_dir: Path, n: int, sync: str, seed: int) -> tuple[Tree, float, float, float]:
    """Returns the tree, the wall and CPU seconds of the n add_node calls, and the wall seconds the
    background artifact mirror still needed after the last call."""
    rng = random.Random(seed)
    t = Tree(run_dir, defer=2, synchronous=sync)
    ids: list[int] = []
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(n):
        # mostly extend recent nodes (a search deepens its best branches), sometimes roll back anywhere
        parent = None if not ids else (rng.choice(ids[-30:]) if rng.random() < 0.9 else rng.choice(ids))
        level = None if parent is None else rng.choice(level_names())
        ok = rng.random() < 0.7
        res = EvalResult(task="bench/t", compiled=True, correct=ok, speedup=rng.lognormvariate(0, 0.3) if ok else None,
                         timing_valid=ok or None, error_kind=None if ok else "mismatch", n_pairs=7,
                         t_candidate_s=1e-3, t_baseline_s=1e-3, build_s=0.5, wall_s=2.0)
        edit = None if level is None else Edit(level=level, kind="pass", payload={"i": i}, rationale="bench")
        ids.append(t.add_node(parent, level, edit, f"h{i}", result=res, route_reason="bench",
                              profile={"hot": [{"func": "fused_op1", "share": 0.5}]}, meta={"i": i},
                              artifacts={"relax.py": RELAX + f"# {i}\n", "candidate.json": f'{{"i": {i}}}'}))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    t1 = time.perf_counter()
    t.flush_mirror()
    return t, wall, cpu, time.perf_counter() - t1


def timeit(fn: Callable[[], object], reps: int) -> tuple[float, float]:
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3, max(ts) * 1e3


def query_rows(t: Tree, d: Path, n: int, reps: int) -> list[tuple[str, str, str]]:
    rows = []
    deepest = max(range(1, n + 1, 97), key=lambda i: len(t.lineage(i)))
    depth = len(t.lineage(deepest))
    for name, fn in (
        ("best(k=1)", lambda: t.best(1)),
        ("best(k=10)", lambda: t.best(10)),
        (f"lineage (depth {depth})", lambda: t.lineage(deepest)),
        ("children", lambda: t.children(deepest)),
        ("by_hash", lambda: t.by_hash(f"h{n // 2}")),
        ("get", lambda: t.get(n // 2)),
    ):
        med, worst = timeit(fn, reps)
        verdict = f"; target <= 50 ms: {'ok' if worst <= 50 else 'MISSED'}" if name.startswith(("best", "lin")) else ""
        rows.append((name, f"{med:.2f} ms", f"worst {worst:.2f} ms of {reps}{verdict}"))
    med, _ = timeit(t.frontier, 3)
    rows.append(("frontier (all live nodes)", f"{med:.1f} ms", f"{len(t.frontier())} nodes"))
    t0 = time.perf_counter()
    t.export_html(d / "tree.html")
    rows.append(("export_html", f"{time.perf_counter() - t0:.2f} s", f"{(d / 'tree.html').stat().st_size / 1e6:.1f} MB"))
    size = sum(p.stat().st_size for p in d.glob("tree.sqlite*"))
    rows.append(("database size", f"{size / 1e6:.1f} MB", "tree.sqlite + WAL"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--sync", nargs="+", default=["NORMAL", "FULL"], help="PRAGMA synchronous modes to try")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rows: list[tuple[str, str, str]] = []
    for sync in args.sync:
        with tempfile.TemporaryDirectory(prefix="bench_tree_") as d:
            t, ins, cpu, flush = build(Path(d), args.nodes, sync, args.seed)
            rows.append((f"insert {args.nodes} nodes (sync={sync})", f"{ins:.2f} s",
                         f"{ins / args.nodes * 1e3:.3f} ms/node; CPU {cpu:.2f} s; "
                         f"target <= 10 s: {'ok' if ins <= 10 else 'MISSED'}"))
            rows.append(("  then: finish file mirror", f"{flush:.2f} s", "background thread, after the last insert"))
            if sync == args.sync[0]:  # the queries do not depend on the sync mode
                rows.extend(query_rows(t, Path(d), args.nodes, args.reps))
            t.close()
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    print(f"{os.cpu_count()} CPUs, load average {load} (other work on the machine slows every row)")
    w = max(len(r[0]) for r in rows)
    print(f"{'measure':<{w}}  {'time':>10}  notes")
    print("-" * (w + 40))
    for name, val, note in rows:
        print(f"{name:<{w}}  {val:>10}  {note}")


if __name__ == "__main__":
    main()
