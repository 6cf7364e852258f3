"""The judge's check of a baseline made from converted files, before any evaluation trusts it: an
engine's outputs (ONNX Runtime, MNN, TensorRT) and torch.compile's (inductor, CPU) on seed-0 inputs
against PyTorch eager's, at the task's tolerance. Run as a child of benchmark/engines.py
(`python -m benchmark.judge.engine_check verify|inductor ...`), so an engine's crash is not the judge's;
a refusal prints `REASON: ...` and exits 3, which the engine's row reports."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from benchmark.engines import call, engine_gpu_call
from benchmark.judge.outputs import as_numpy, compare
from benchmark.judge.refs import flat_outputs
from benchmark.task import load_task_file


def _inputs(task: Any, seed: int = 0) -> list[Any]:
    return [as_numpy(t) for t in task.make_inputs(seed)]


def _inductor(task_path: str, cache: str, threads: str, out: str) -> None:
    import numpy as np
    import torch

    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
    torch.set_num_threads(int(threads))
    task = load_task_file(task_path)
    model = task.make_model().eval()
    tin = [torch.from_numpy(a.copy()) for a in _inputs(task)]
    with torch.no_grad():
        want = flat_outputs(model(*tin))
        try:
            got = flat_outputs(torch.compile(model)(*tin))
        except Exception as e:  # noqa: BLE001 - the compiler's refusal is the row's reason
            print(f"REASON: torch.compile (inductor, CPU) failed: {type(e).__name__}: "
                  f"{str(e).strip().splitlines()[0][:400] if str(e).strip() else ''}")
            sys.exit(3)
    task_tol = (task.atol, task.rtol)
    err, msg, ea, _ = compare([np.asarray(g) for g in got], want, *task_tol)
    if err:
        print(f"REASON: torch.compile computes another result than eager ({err}: {msg[:300]})")
        sys.exit(3)
    Path(out).write_text(json.dumps({"max_abs_err": float(ea)}))


def _verify(kind: str, task_path: str, path: str, device: str, threads: str, out: str) -> None:
    """The engine's outputs on seed-0 inputs against PyTorch's, at the task's tolerance."""
    import numpy as np
    import torch

    task = load_task_file(task_path)
    ins = _inputs(task)
    with torch.no_grad():
        want = flat_outputs(task.make_model()(*[torch.from_numpy(a.copy()) for a in ins]))
    try:
        if kind == "tensorrt":
            got = engine_gpu_call(kind, Path(path), ins, keep_outputs=True)()
        else:
            got = call(kind, Path(path), threads=int(threads), device=device)(ins)
    except Exception as e:  # noqa: BLE001 - the engine's refusal at run time is the row's reason
        print(f"REASON: it failed to run the model: {type(e).__name__}: "
              f"{str(e).strip().splitlines()[0][:400] if str(e).strip() else ''}")
        sys.exit(3)
    got = [np.asarray(g) for g in got]
    if len(got) != len(want):
        print(f"REASON: it returned {len(got)} output(s), PyTorch {len(want)}")
        sys.exit(3)
    got = [g.reshape(w.shape) if g.size == w.size else g for g, w in zip(got, want, strict=True)]
    err, msg, ea, _ = compare(got, want, task.atol, task.rtol)
    if err:
        print(f"REASON: it computes another result than PyTorch at the task's tolerance ({err}: {msg[:300]})")
        sys.exit(3)
    Path(out).write_text(json.dumps({"max_abs_err": float(ea)}))


def main(argv: list[str]) -> None:
    op, args = argv[0], argv[1:]
    {"verify": _verify, "inductor": _inductor}[op](*args)


if __name__ == "__main__":
    main(sys.argv[1:])
