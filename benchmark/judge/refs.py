"""PyTorch references in a process of their own, stored as .npy files and read memory-mapped.

The runner (benchmark/judge/runner.py) starts `compute` in a second child once the evaluation child has
passed its memory check; it writes, per seed in order, `<seed>_<i>.npy` (C order) then `<seed>.done`,
or `failed.txt` with one line. The evaluation child compares seed by seed (`open_refs` waits for a
seed), chunk by chunk, `release` dropping each compared chunk of a reference from its resident memory.
No TVM here.
"""

from __future__ import annotations

import json
import mmap
import time
from pathlib import Path
from typing import Any

import numpy as np

FAILED = "failed.txt"


class RefsFailed(RuntimeError):
    """The reference process could not compute the references (the message is one line)."""


def flat_outputs(out) -> list[np.ndarray]:
    """A model's outputs (a tensor, or nested lists / tuples of them) as host arrays, in order."""
    import torch  # here: the runner imports this module without torch

    if isinstance(out, torch.Tensor):
        return [out.detach().cpu().numpy()]
    if isinstance(out, (list, tuple)):
        res: list[np.ndarray] = []
        for o in out:
            res.extend(flat_outputs(o))
        return res
    return [np.asarray(out)]


def compute(task_path: str, seeds: list[int], refs_dir: str) -> None:
    """Model outputs for each seed, written one seed at a time (only one seed's outputs in memory)."""
    import torch

    from benchmark.task import load_task_file

    d = Path(refs_dir)
    try:
        task = load_task_file(task_path)
        model = task.make_model()
        for seed in seeds:
            with torch.no_grad():
                outs = flat_outputs(model(*task.make_inputs(seed)))
            n = len(outs)
            for i, o in enumerate(outs):
                # np.ascontiguousarray would make a 0-d output (a loss, a mean) 1-d
                np.save(d / f"{seed}_{i}.npy", np.asarray(o, order="C"))
            del outs
            (d / f".{seed}.done").write_text(json.dumps({"n": n}))
            (d / f".{seed}.done").replace(d / f"{seed}.done")
    except Exception as e:  # noqa: BLE001 - the evaluation child reports it
        lines = [ln for ln in str(e).splitlines() if ln.strip()]
        (d / FAILED).write_text(f"{type(e).__name__}: {lines[0] if lines else ''}"[:2000])


def wait(refs_dir: str, seed: int, timeout_s: float = 3600.0) -> int:
    """Blocks until seed's references are written; their count. Raises RefsFailed on failure."""
    d = Path(refs_dir)
    t0 = time.monotonic()
    delay = 0.002
    while True:
        done = d / f"{seed}.done"
        if done.exists():
            return int(json.loads(done.read_text())["n"])
        if (d / FAILED).exists():
            raise RefsFailed(f"the reference (PyTorch) failed: {(d / FAILED).read_text().strip()}")
        if time.monotonic() - t0 > timeout_s:
            raise RefsFailed(f"no reference for seed {seed} after {timeout_s:g} s")
        time.sleep(delay)
        delay = min(0.05, delay * 2)


def open_refs(refs_dir: str, seed: int) -> list[np.ndarray]:
    n = wait(refs_dir, seed)
    return [np.load(Path(refs_dir) / f"{seed}_{i}.npy", mmap_mode="r") for i in range(n)]


CHUNK_BYTES = 8 << 20  # a chunk and its float64 temporaries: ~50 MiB


def release(a: np.ndarray, lo: int, hi: int) -> None:
    """Drop the resident pages of bytes [lo, hi) of a memory-mapped array (read-only file pages: they
    come back from the file if read again); a no-op for other arrays."""
    mm: Any = getattr(a, "_mmap", None)
    if mm is None or not hasattr(mm, "madvise"):
        return
    start = int(getattr(a, "offset", 0)) % mmap.ALLOCATIONGRANULARITY + lo
    page = mmap.PAGESIZE
    first = (start // page) * page
    try:
        mm.madvise(mmap.MADV_DONTNEED, first, max(0, start + (hi - lo) - first) // page * page)
    except (OSError, ValueError):
        pass
