"""This machine's roof, measured once and cached: peak FMA GFLOP/s at the run's thread count and dtype,
and streaming GB/s per cache level and DRAM (`profilers/roof_bench.py` measures; `leka bench roof`
prints it).

The cache is one JSON file per machine key under `<cache>/calibration/` (the cache home: `$LEKA_CACHE`,
`.leka-cache/` in a checkout, the user's cache when installed; leka/backends/paths.py). The key is the
CPU model (/proc/cpuinfo), a short hash of its flags and cache sizes (VMs often report one generic
model name for different hosts), the thread count and the dtype; `refresh=True` measures again. A
miss measures under a file lock, so parallel evaluations measure once. GPUs: a roof measured with
torch on the device (`leka bench roof --backend cuda`, cached by arch and dtype) when there is one,
else the datasheet table of the backend (`source="table"`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import re
import time
from pathlib import Path

from pydantic import BaseModel, Field

from leka.backends import get_backend
from leka.backends.paths import cache_home


class BandLevel(BaseModel):
    """Streaming bandwidth of one memory level, and how much the threads can keep in it together."""

    name: str  # L1 | L2 | LLC | DRAM (GPU: L2 | DRAM)
    capacity: int = 0  # bytes the run's threads hold in this level together; 0 = unbounded (DRAM)
    read_gbps: float | None = None  # sum of an array
    copy_gbps: float | None = None  # c = a
    triad_gbps: float | None = None  # a = b + k c

    @property
    def gbps(self) -> float:
        """The level's roof: the best of its streaming kernels (a kernel that mostly reads can reach
        the read figure, so the roof is that of the best pattern, not of triad alone)."""
        return max(x for x in (self.read_gbps, self.copy_gbps, self.triad_gbps, 0.0) if x is not None)


class Peaks(BaseModel):
    gflops: float  # peak FMA throughput at `dtype` (GPU: matmul)
    gbps: float  # DRAM (the slowest level)
    source: str  # "measured" | "cache" | "table"
    cpu: str  # the machine key the numbers belong to (cache file name; GPUs: the datasheet name)
    threads: int = 1
    seconds: float = 0.0  # how long the measurement took
    dtype: str = "float32"
    model: str = ""  # lscpu's model name / the GPU's name
    device: str = "cpu"  # cpu | gpu
    levels: list[BandLevel] = Field(default_factory=list)  # smallest first, DRAM last
    fma: dict = Field(default_factory=dict)  # the FMA measurement's details (lanes, vector bits, chains)
    measured_at: str = ""  # UTC, ISO 8601

    @property
    def ridge(self) -> float:
        """FLOPs per byte where the memory roof meets the compute roof."""
        return self.gflops / max(self.gbps, 1e-9)

    def level_for(self, nbytes: float) -> tuple[str, float]:
        """(level, GB/s) of the smallest level the working set fits in; DRAM (or the only bandwidth
        known) otherwise. A kernel timed over and over keeps a working set that fits in its cache."""
        for lv in self.levels:
            if lv.capacity and nbytes <= lv.capacity and lv.gbps > 0:
                return lv.name, lv.gbps
        return "DRAM", self.gbps


def cache_dir() -> Path:
    return cache_home() / "calibration"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _fingerprint() -> str:
    """Flags and cache sizes: what tells two hosts apart that report the same model name."""
    from profilers.roof_bench import cache_levels

    flags = ""
    try:
        flags = next((ln for ln in Path("/proc/cpuinfo").read_text().splitlines()
                      if ln.startswith(("flags", "Features"))), "")
    except OSError:
        pass
    text = flags + json.dumps(cache_levels()) + platform.machine()
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _clean(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_")


def cpu_key(threads: int | None = None, dtype: str = "float32") -> str:
    threads = threads or len(os.sched_getaffinity(0))
    return _clean(f"{cpu_model()}-{_fingerprint()}-{threads}t-{dtype}")


def gpu_key(backend: str, arch: str, dtype: str = "float32") -> str:
    return _clean(f"{backend}-{arch}-{dtype}")


def measure_cpu(threads: int, dtype: str = "float32", budget_s: float = 6.0,
                max_bytes: int | None = None) -> Peaks:
    """FMA at `dtype` and read / copy / triad per level, in a child process (roof_bench). `budget_s`
    is split over the measurements; `max_bytes` caps a level's working set (tests)."""
    from profilers import roof_bench as R

    t0 = time.perf_counter()
    f = R.fma(dtype, threads, seconds=budget_s * 0.15)
    if "error" in f:
        raise R.RoofBenchUnavailable(f"{dtype}: {f['error']}")
    plan = R.level_plan(R.cache_levels(), threads)
    levels = []
    per_level = budget_s * 0.85 / len(plan)
    for lv in plan:
        elems = lv["elems_per_thread"] if max_bytes is None else min(lv["elems_per_thread"], max_bytes // 12 // threads)
        s = R.stream(elems, threads, seconds=per_level)
        levels.append(BandLevel(name=lv["name"], capacity=lv["capacity"], read_gbps=s["read"],
                                copy_gbps=s["copy"], triad_gbps=s["triad"]))
    return Peaks(gflops=f["gflops"], gbps=levels[-1].gbps, source="measured", cpu=cpu_key(threads, dtype),
                 threads=threads, seconds=round(time.perf_counter() - t0, 2), dtype=dtype, model=cpu_model(),
                 levels=levels, fma={k: f[k] for k in ("lanes", "vector_bits", "chains") if k in f},
                 measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def measure_gpu(backend: str, arch: str, dtype: str = "float32") -> Peaks:
    """The torch device of `backend` (its table's `roof_device`): matmul and copy (gpu only)."""
    from profilers import roof_bench as R

    t0 = time.perf_counter()
    g = R.measure_gpu(dtype, device=get_backend(backend).roof_device)
    levels = [BandLevel(name=lv["name"], capacity=lv["capacity"], copy_gbps=lv["copy"]) for lv in g["levels"]]
    return Peaks(gflops=g["gflops"], gbps=levels[-1].gbps if levels else 0.0, source="measured",
                 cpu=gpu_key(backend, arch, dtype), seconds=round(time.perf_counter() - t0, 2), dtype=dtype,
                 model=g["name"], device="gpu", levels=levels,
                 measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def _read(path: Path) -> Peaks | None:
    if not path.is_file():
        return None
    try:
        return Peaks.model_validate_json(path.read_text()).model_copy(update={"source": "cache"})
    except ValueError:
        return None  # a corrupt or old-format file is measured over


def _write(path: Path, p: Peaks) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(p.model_dump(), indent=1))
    tmp.replace(path)  # atomic: parallel evaluations never read half a file


def _arch(target, spec) -> str:
    return str(getattr(target, "attrs", {}).get("arch", "")) or spec.default_arch


def peaks(target=None, refresh: bool = False, dtype: str = "float32", threads: int | None = None,
          measure: bool = True, budget_s: float = 6.0, max_bytes: int | None = None) -> Peaks:
    """Roofs for `target` (a tvm Target, a backend name, or None for this CPU). CPU: cached, else
    measured now (`measure=False`: a miss raises FileNotFoundError instead). GPU: the roof measured
    for that arch when `leka bench roof --backend` cached one, else the datasheet; never measured here
    (the profiler may run where the device is not)."""
    kind = getattr(getattr(target, "kind", None), "name", target) or "llvm"
    spec = get_backend(kind)
    if spec.peaks:  # a device: measured on its host by `leka bench roof --backend`, else the datasheet
        arch = _arch(target, spec)
        cached = None if refresh else _read(cache_dir() / f"{gpu_key(kind, arch, dtype)}.json")
        if cached is not None:
            return cached
        name, gf, bw = spec.peaks.get(arch, spec.peaks[spec.default_arch])
        return Peaks(gflops=gf, gbps=bw, source="table", cpu=name, device="gpu", dtype=dtype)
    threads = threads or len(os.sched_getaffinity(0))
    path = cache_dir() / f"{cpu_key(threads, dtype)}.json"
    if not refresh and (p := _read(path)) is not None:
        return p
    if not measure:
        raise FileNotFoundError(f"no measured roof at {path}: run `leka bench roof`")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one measurement at a time; the others then read it
        if not refresh and (p := _read(path)) is not None:
            return p
        p = measure_cpu(threads, dtype, budget_s=budget_s, max_bytes=max_bytes)
        _write(path, p)
    return p


def refresh_gpu(backend: str, target=None, dtype: str = "float32") -> Peaks:
    """Measure the device roof of `backend` and cache it (what `leka bench roof --backend cuda` runs)."""
    spec = get_backend(backend)
    arch = _arch(target, spec)
    p = measure_gpu(backend, arch, dtype)
    _write(cache_dir() / f"{gpu_key(backend, arch, dtype)}.json", p)
    return p
