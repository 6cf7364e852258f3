"""Find the first kernel whose output differs between CPU and GPU (docs/DESIGN.md, "Pinned facts": DLight's default CUDA
schedules gave NaN on a Llama block). Runs the same lowered module on llvm and cuda, captures every
kernel's output through the VM instrument, and reports the first divergence.

    python -m experiments.cuda_nan_probe [TASK]        # on a GPU host
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from benchmark.task import resolve
from leka import ir
from leka import tvm_adapter as A

ROOT = Path(__file__).resolve().parents[1]


def capture(backend: str, cand, params, inputs):
    target = A.make_target(backend)
    built = ir.build_candidate(cand, target, params)
    runner = A.VMRunner(built.executable, A.device_for(backend))
    outs = []

    def instrument(func, sym, before_run, ret_value, *args):
        if not before_run and args and not sym.startswith("vm.builtin"):
            last = args[-1]
            try:
                outs.append((sym, last.numpy().copy()))
            except Exception:  # noqa: BLE001 - not a tensor (a shape, a scalar)
                pass
        return 0

    runner.vm.set_instrument(instrument)
    final = runner(*inputs)
    return outs, final, built


def main() -> None:
    task = resolve(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "benchmark/examples/llama_block.py"))
    root = ir.import_root(task)
    cand = ir.root_candidate(task, "cuda", root)
    inputs = [t.numpy() for t in task.make_inputs(0)]
    cpu, cpu_final, _ = capture("llvm", cand.model_copy(update={"backend": "llvm"}), root.params, inputs)
    gpu, gpu_final, built = capture("cuda", cand, root.params, inputs)
    print(f"{len(cpu)} cpu calls, {len(gpu)} gpu calls")
    for i, ((sc, a), (sg, b)) in enumerate(zip(cpu, gpu, strict=False)):
        bad = (not np.isfinite(b).all()) or (a.shape == b.shape and not np.allclose(a, b, atol=1e-3, rtol=1e-3))
        finite = np.isfinite(b).all()
        err = float(np.nanmax(np.abs(a - b))) if a.shape == b.shape else float("nan")
        print(f"{i:3d} {sc:50s} {sg:50s} finite={finite} maxerr={err:.3g}{'  <-- FIRST DIVERGENCE' if bad else ''}")
        if bad:
            name = sg
            funcs = A.prim_funcs(built.lowered)
            if name in funcs:
                print(funcs[name].script()[:6000])
            break
    print("final finite:", [bool(np.isfinite(x).all()) for x in gpu_final])


if __name__ == "__main__":
    main()
