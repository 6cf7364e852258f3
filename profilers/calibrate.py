"""This machine's roofs: peak GFLOP/s (fp32 GEMM) and GB/s (streaming copy), measured once and cached.

The compute roof is torch's fp32 GEMM at the thread count TVM uses here (the CPU's affinity set):
what a well-tuned kernel reaches, a fair "100%". The memory roof is the best of a large numpy copy,
a numpy triad and a threaded torch copy, on arrays far bigger than the last-level cache. The result
is cached as JSON under `<cache>/calibration/<cpu>.json` (the cache home: `$LEKA_CACHE`, `.leka-cache/`
in a checkout, the user's cache when installed; leka/backends/paths.py) and re-used; `refresh=True` measures again. GPUs are not measured here (the profiler
may run on a machine without one): their roofs come from a datasheet table.
"""

from __future__ import annotations

import json
import os
import platform
import re
import time
from pathlib import Path

from pydantic import BaseModel

from leka.backends import get_backend
from leka.backends.paths import cache_home


class Peaks(BaseModel):
    gflops: float
    gbps: float
    source: str  # "measured" | "cache" | "table"
    cpu: str  # the machine key the numbers belong to (cache file name)
    threads: int = 1
    seconds: float = 0.0  # how long the measurement took

    @property
    def ridge(self) -> float:
        """FLOPs per byte where the memory roof meets the compute roof."""
        return self.gflops / max(self.gbps, 1e-9)


def cache_dir() -> Path:
    return cache_home() / "calibration"


def cpu_key(threads: int | None = None) -> str:
    from leka import tvm_adapter as A

    threads = threads or len(os.sched_getaffinity(0))
    name = A.cpu_target(threads).attrs.get("mcpu", "") or platform.processor() or platform.machine()
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{name}-{threads}t")


def _best(fn, reps: int) -> float:
    fn()  # warm-up: page faults and thread-pool start-up are not bandwidth
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(threads: int, budget_s: float = 3.0) -> tuple[float, float]:
    """(GFLOP/s, GB/s), best of a few repetitions; sizes fit a few-second budget on a small CPU."""
    import numpy as np
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        n = 1024
        a, b, c = torch.randn(n, n), torch.randn(n, n), torch.empty(n, n)
        t = _best(lambda: torch.mm(a, b, out=c), reps=6)
        gflops = 2 * n**3 / t / 1e9
        elems = 1 << 24  # 64 MiB per fp32 array: well past any last-level cache of an edge CPU
        x, y, z = np.ones(elems, np.float32), np.ones(elems, np.float32), np.empty(elems, np.float32)
        copy = 2 * x.nbytes / _best(lambda: np.copyto(z, x), reps=4)
        triad = 3 * x.nbytes / _best(lambda: np.add(x, y, out=z), reps=4)
        tx, tz = torch.from_numpy(x), torch.from_numpy(z)
        tcopy = 2 * x.nbytes / _best(lambda: tz.copy_(tx), reps=4)
        gbps = max(copy, triad, tcopy) / 1e9
    finally:
        torch.set_num_threads(old)
    return gflops, gbps


def peaks(target=None, refresh: bool = False) -> Peaks:
    """Roofs for `target` (a tvm Target, a backend name, or None for this CPU)."""
    kind = getattr(getattr(target, "kind", None), "name", target) or "llvm"
    spec = get_backend(kind)
    if spec.peaks:  # datasheet roofs of a device not measured here (leka.backends)
        arch = str(getattr(target, "attrs", {}).get("arch", "")) or spec.default_arch
        name, gf, bw = spec.peaks.get(arch, spec.peaks[spec.default_arch])
        return Peaks(gflops=gf, gbps=bw, source="table", cpu=name)
    threads = len(os.sched_getaffinity(0))
    key = cpu_key(threads)
    path = cache_dir() / f"{key}.json"
    if path.is_file() and not refresh:
        try:
            p = Peaks.model_validate_json(path.read_text())
            return p.model_copy(update={"source": "cache"})
        except ValueError:
            pass  # a corrupt cache file is measured over
    t0 = time.perf_counter()
    gflops, gbps = measure(threads)
    p = Peaks(gflops=gflops, gbps=gbps, source="measured", cpu=key, threads=threads,
              seconds=time.perf_counter() - t0)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(p.model_dump(), indent=1))
    tmp.replace(path)  # atomic: parallel evaluations never read half a file
    return p
