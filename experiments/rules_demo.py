"""Rule-based policy on the two embedded examples: for each kernel, the best rule trace (L1) and,
for GEMM-like kernels, the C++ micro-kernel (L2), timed against the untuned kernel.

    python -m experiments.rules_demo [--kernels N]

Untuned = the zero pipeline's PrimFunc with no schedule (scalar, single-threaded loops). Timings are
per kernel, in this process (TVM's thread pool for L1; OpenMP for the C++, called through ctypes).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from agents.common import analyse, rank_kernels
from agents.l1_tir import RuleL1Agent
from agents.l2_source import compile_cpp, gemm_shape, gemm_source, run_cpp
from benchmark.task import load_task_file
from leka import ir
from leka import tvm_adapter as A
from leka.ir import sched

EX = Path(__file__).resolve().parents[1] / "benchmark" / "examples"


def _args(func, seed=0):
    rng = np.random.default_rng(seed)
    # positive data: BN's variance goes through sqrt, and NaN == NaN would hide a wrong kernel
    return [(np.asarray(rng.standard_normal(s)) > 0) if d == "bool" else np.asarray(rng.uniform(0.5, 1.5, s)).astype(d)
            for _, s, d in A.buffer_signature(func)]


def _time_cpp(so, entry, arrays, n=20) -> float:
    run_cpp(so, entry, arrays)
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        run_cpp(so, entry, arrays)
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def demo(path: Path, n_kernels: int) -> None:
    task = load_task_file(path)
    root = ir.import_root(task)
    cand = ir.root_candidate(task, root=root)
    target = A.cpu_target()
    lanes = A.vector_lanes_fp32(target)
    funcs = A.prim_funcs(A.lower(ir.relax_module(cand, root.params), target))
    agent = RuleL1Agent(root_params=root.params)
    print(f"\n== {task.id}  ({len(funcs)} kernels, {lanes} fp32 lanes)")
    print(f"{'kernel':48s} {'kind':15s} {'untuned ms':>10s} {'L1 ms':>8s} {'x':>6s} {'C++ ms':>8s}  best rule")
    tot_u = tot_s = 0.0
    for name, _ in rank_kernels(funcs)[:n_kernels]:
        f = funcs[name]
        info = analyse(f, name)
        args = _args(f)
        ref, t_u = A.run_prim_func(A.build_prim_func(f, target), args, number=3)
        best = (float("inf"), "-")
        for why, steps in agent.variants_for(f, name, lanes):
            out, t = A.run_prim_func(A.build_prim_func(sched.apply_trace(f, steps), target), args, number=10)
            if not np.allclose(out[-1], ref[-1], rtol=1e-4, atol=1e-4):
                print(f"   !! {why}: wrong result")
                continue
            best = min(best, (t, why))
        cpp = "-"
        g = gemm_shape(f, info)
        if g is not None:
            src = gemm_source(g, "demo_kernel", lanes)
            so = compile_cpp(src)
            got = run_cpp(so, "demo_kernel", args)
            ok = np.allclose(got[g.c], ref[g.c], rtol=1e-3, atol=1e-3)
            cpp = f"{_time_cpp(so, 'demo_kernel', args) * 1e3:.3f}" + ("" if ok else " WRONG")
        tot_u += t_u
        tot_s += best[0] if best[0] < float("inf") else t_u
        print(f"{name[:48]:48s} {info.kind:15s} {t_u * 1e3:10.3f} {best[0] * 1e3:8.3f} {t_u / best[0]:6.1f} {cpp:>8s}  {best[1]}")
    print(f"{'sum over these kernels':64s} {tot_u * 1e3:10.3f} {tot_s * 1e3:8.3f} {tot_u / tot_s:6.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", type=int, default=8, help="hottest N kernels per example (by FLOPs)")
    a = ap.parse_args()
    for ex in ("mbv2_block", "llama_block"):
        demo(EX / f"{ex}.py", a.kernels)


if __name__ == "__main__":
    main()
