"""The machine's peaks, measured: FMA throughput and streaming bandwidth per cache level (CPU), matmul
and copy throughput (a torch GPU). What `leka bench roof` and `profilers.calibrate.peaks` run.

CPU: a small C program (SOURCE below, compiled once per machine with `-O3 -march=native -fopenmp` by
`$LEKA_CC` or `cc`, into `<cache>/roof/`) runs in its own process with OpenMP at the requested thread
count, threads pinned. `fma DTYPE`: CHAINS independent chains of packed FMAs per thread (vector width
from the compiler's target: 512-bit with AVX-512, 256 with AVX2), so the FMA units' latency is hidden
and the number is the ports' throughput; FLOPs = 2 per lane per FMA. `stream N`: each thread works on
its own arrays of N floats (first touched by that thread): `read` (sum with 8 vector accumulators),
`copy` (c = a) and `triad` (a = b + k c), STREAM's byte counts (1, 2, 3 arrays a pass; write-allocate
traffic not counted), best of SAMPLES samples of about SECONDS / SAMPLES each. The array sizes per
level come from /sys/devices/system/cpu/cpu0/cache (`cache_levels`): half of a private cache per
thread, half of the shared last-level cache over all threads, and DRAM at twice the last-level cache
(at least 256 MiB, at most a quarter of the available memory). Only our own code runs here: no
candidate is involved, so the measurement is trusted-side.

GPU (`measure_gpu`): torch matmul (fp32 with TF32 off, or fp16) on 8192^2, and a device copy of
1 GiB (DRAM) and of a quarter of the L2 (its level), timed with CUDA events, best of a few.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from leka.backends.paths import cache_home

CPU_DTYPES = ("float32", "float64", "float16")  # float16 only where the ISA has packed fp16 FMAs
GPU_DTYPES = ("float32", "float16")
CFLAGS = ("-O3", "-march=native", "-ffp-contract=fast", "-fopenmp", "-std=gnu11")

SOURCE = r"""
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__)
#define VBYTES 64
#elif defined(__AVX__)
#define VBYTES 32
#else
#define VBYTES 16
#endif
#define CHAINS 16
static double sink;

#define FMA_KERNEL(NAME, T, M, A)                                              \
static double NAME(long iters, int *lanes) {                                  \
    typedef T v __attribute__((vector_size(VBYTES)));                         \
    double s = 0;                                                              \
    *lanes = VBYTES / sizeof(T);                                              \
    _Pragma("omp parallel reduction(+:s)")                                    \
    {                                                                          \
        v acc[CHAINS];                                                         \
        v m = (v){0} + (T)(M), a = (v){0} + (T)(A);                           \
        for (int c = 0; c < CHAINS; c++) acc[c] = (v){0} + (T)(0.001 * (c + 1)); \
        for (long it = 0; it < iters; it++) {                                  \
            for (int c = 0; c < CHAINS; c++) acc[c] = acc[c] * m + a;          \
        }                                                                      \
        for (int c = 0; c < CHAINS; c++)                                       \
            for (int l = 0; l < (int)(VBYTES / sizeof(T)); l++) s += (double)acc[c][l]; \
    }                                                                          \
    return s;                                                                  \
}
FMA_KERNEL(fma_float32, float, 0.999999, 1e-6)
FMA_KERNEL(fma_float64, double, 0.999999, 1e-6)
#if defined(__AVX512FP16__)
FMA_KERNEL(fma_float16, _Float16, 0.999, 1e-3)
#endif

static double fma_run(const char *dtype, long iters, int *lanes) {
    if (!strcmp(dtype, "float32")) return fma_float32(iters, lanes);
    if (!strcmp(dtype, "float64")) return fma_float64(iters, lanes);
#if defined(__AVX512FP16__)
    if (!strcmp(dtype, "float16")) return fma_float16(iters, lanes);
#endif
    *lanes = 0;
    return 0;
}

static int cmd_fma(const char *dtype, double seconds, int samples) {
    int lanes = 0, threads = omp_get_max_threads();
    double t0 = omp_get_wtime();
    sink += fma_run(dtype, 1000, &lanes);  /* thread start-up, and is the dtype there at all */
    if (lanes == 0) { printf("{\"error\": \"no packed %s FMA in this ISA\"}\n", dtype); return 0; }
    long iters = 1000;
    double t = omp_get_wtime() - t0;
    while (t < seconds / samples / 4 && iters < (1L << 40)) {  /* calibrate: a sample of ~seconds/samples */
        iters *= 4;
        t0 = omp_get_wtime();
        sink += fma_run(dtype, iters, &lanes);
        t = omp_get_wtime() - t0;
    }
    iters = (long)(iters * (seconds / samples) / (t > 0 ? t : 1e-9)) + 1;
    double best = 1e30;
    for (int s = 0; s < samples; s++) {
        t0 = omp_get_wtime();
        sink += fma_run(dtype, iters, &lanes);
        t = omp_get_wtime() - t0;
        if (t < best) best = t;
    }
    double flops = 2.0 * CHAINS * lanes * (double)iters * threads;
    printf("{\"gflops\": %.6g, \"threads\": %d, \"lanes\": %d, \"vector_bits\": %d, \"chains\": %d, "
           "\"sink\": %g}\n", flops / best / 1e9, threads, lanes, VBYTES * 8, CHAINS, sink);
    return 0;
}

typedef float vf __attribute__((vector_size(VBYTES)));
#define LANES ((long)(VBYTES / sizeof(float)))

static double pass(int k, long n, long reps, float **A, float **B, float **C) {
    double t0 = 0, t1 = 0;
    #pragma omp parallel
    {
        int t = omp_get_thread_num();
        float *restrict a = A[t], *restrict b = B[t], *restrict c = C[t];
        vf acc[8];
        for (int j = 0; j < 8; j++) acc[j] = (vf){0};
        #pragma omp barrier
        #pragma omp master
        t0 = omp_get_wtime();
        #pragma omp barrier
        for (long r = 0; r < reps; r++) {
            if (k == 0) {
                const vf *av = (const vf *)a;
                for (long i = 0; i < n / LANES; i += 8)
                    for (int j = 0; j < 8; j++) acc[j] += av[i + j];
            } else if (k == 1) {
                for (long i = 0; i < n; i++) c[i] = a[i];
            } else {
                for (long i = 0; i < n; i++) a[i] = b[i] + 0.5f * c[i];
            }
            __asm__ volatile("" ::: "memory");  /* every pass reads and writes memory again */
        }
        #pragma omp barrier
        #pragma omp master
        t1 = omp_get_wtime();
        float s = 0;
        for (int j = 0; j < 8; j++) for (long l = 0; l < LANES; l++) s += acc[j][l];
        #pragma omp atomic
        sink += s + a[n / 2] + c[n / 3];
    }
    return t1 - t0;
}

static int cmd_stream(long n, double seconds, int samples) {
    int T = omp_get_max_threads();
    n = (n + 8 * LANES - 1) / (8 * LANES) * (8 * LANES);  /* whole unrolled vector blocks */
    float **A = calloc(T, sizeof(float *)), **B = calloc(T, sizeof(float *)), **C = calloc(T, sizeof(float *));
    size_t bytes = (size_t)n * sizeof(float);
    int bad = 0;
    #pragma omp parallel
    {
        int t = omp_get_thread_num();  /* first touch by the thread that streams it */
        A[t] = aligned_alloc(64, bytes); B[t] = aligned_alloc(64, bytes); C[t] = aligned_alloc(64, bytes);
        if (!A[t] || !B[t] || !C[t]) { bad = 1; }
        else for (long i = 0; i < n; i++) { A[t][i] = 1.0f; B[t][i] = 2.0f; C[t][i] = 0.5f; }
    }
    if (bad) { printf("{\"error\": \"out of memory for %ld floats per thread\"}\n", n); return 1; }
    const char *names[3] = {"read", "copy", "triad"};
    const int arrays[3] = {1, 2, 3};
    printf("{\"elems_per_thread\": %ld, \"threads\": %d", n, T);
    for (int k = 0; k < 3; k++) {
        pass(k, n, 1, A, B, C);  /* warm: pages, caches */
        double target = seconds / 3 / samples, t = pass(k, n, 1, A, B, C);
        long reps = 1;
        while (t < target / 4 && reps < (1L << 40)) {  /* calibrate on whole samples: a pass of L1 is ~us */
            reps *= 4;
            t = pass(k, n, reps, A, B, C);
        }
        reps = (long)(reps * target / (t > 0 ? t : 1e-9)) + 1;
        double best = 1e30;
        for (int s = 0; s < samples; s++) {
            t = pass(k, n, reps, A, B, C);
            if (t < best) best = t;
        }
        double moved = (double)arrays[k] * bytes * T * reps;
        printf(", \"%s\": %.6g", names[k], moved / best / 1e9);
    }
    printf(", \"sink\": %g}\n", sink);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 5 && !strcmp(argv[1], "fma")) return cmd_fma(argv[2], atof(argv[3]), atoi(argv[4]));
    if (argc >= 5 && !strcmp(argv[1], "stream")) return cmd_stream(atol(argv[2]), atof(argv[3]), atoi(argv[4]));
    fprintf(stderr, "usage: %s fma DTYPE SECONDS SAMPLES | stream ELEMS_PER_THREAD SECONDS SAMPLES\n", argv[0]);
    return 2;
}
"""


class RoofBenchUnavailable(RuntimeError):
    """No C compiler with OpenMP here: the roof cannot be measured (the caller says so)."""


def compiler() -> str:
    return os.environ.get("LEKA_CC", "cc")


def binary() -> Path:
    """The compiled benchmark, built once per source / compiler / flags (a `-march=native` binary
    belongs to the machine that built it, so it lives in the machine-local cache)."""
    cc = compiler()
    if not shutil.which(cc):
        raise RoofBenchUnavailable(f"no C compiler {cc!r} on PATH (LEKA_CC)")
    try:
        version = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise RoofBenchUnavailable(f"could not run {cc}: {e}") from e
    key = hashlib.sha256("\0".join((SOURCE, version, *CFLAGS, cc)).encode()).hexdigest()[:16]
    out = cache_home() / "roof" / f"roofbench-{key}"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    src = out.with_suffix(f".{os.getpid()}.c")
    src.write_text(SOURCE)
    tmp = out.with_suffix(f".{os.getpid()}.bin")
    try:
        r = subprocess.run([cc, *CFLAGS, "-o", str(tmp), str(src)], capture_output=True, text=True, timeout=120)
    finally:
        src.unlink(missing_ok=True)
    if r.returncode != 0:
        raise RoofBenchUnavailable(f"{cc} could not build the roof benchmark: {r.stderr.strip()[-400:]}")
    tmp.replace(out)
    return out


def _run(args: list[str], threads: int, timeout: float = 120.0) -> dict[str, Any]:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "OMP_PROC_BIND": "close", "OMP_PLACES": "cores",
           "OMP_WAIT_POLICY": "active"}
    r = subprocess.run([str(binary()), *args], capture_output=True, text=True, timeout=timeout, env=env)
    if r.returncode != 0:
        raise RoofBenchUnavailable(f"roof benchmark {' '.join(args)} failed: {(r.stdout + r.stderr).strip()[-300:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def fma(dtype: str, threads: int, seconds: float = 0.6, samples: int = 3) -> dict[str, Any]:
    """{"gflops", "lanes", "vector_bits", ...} or {"error": why} (a dtype the ISA has no packed FMA for)."""
    if dtype not in CPU_DTYPES:
        raise ValueError(f"dtype {dtype!r}: the CPU roof measures {', '.join(CPU_DTYPES)}")
    return _run(["fma", dtype, str(seconds), str(samples)], threads)


def stream(elems_per_thread: int, threads: int, seconds: float = 0.6, samples: int = 3) -> dict[str, Any]:
    """{"read", "copy", "triad"} in GB/s over all threads, each on its own arrays of that many floats."""
    return _run(["stream", str(max(int(elems_per_thread), 1)), str(seconds), str(samples)], threads)


def _size(text: str) -> int:
    text = text.strip().upper()
    mult = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    return int(text.rstrip("KMG") or 0) * mult


def cache_levels(sysfs: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> list[dict[str, Any]]:
    """[{"name": "L1"|"L2"|"L3", "bytes": size, "shared_by": cpus}] of the data / unified caches, smallest
    first; [] where sysfs does not say (the roof then has DRAM only)."""
    out = []
    for d in sorted(sysfs.glob("index*")):
        try:
            if (d / "type").read_text().strip() == "Instruction":
                continue
            level, size = int((d / "level").read_text()), _size((d / "size").read_text())
            shared = _cpu_count((d / "shared_cpu_list").read_text())
        except (OSError, ValueError):
            continue
        if size > 0:
            out.append({"name": f"L{level}", "bytes": size, "shared_by": shared})
    return sorted(out, key=lambda c: c["bytes"])


def _cpu_count(cpu_list: str) -> int:
    n = 0
    for part in filter(None, cpu_list.strip().split(",")):
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return max(n, 1)


def available_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 * 2**30


def level_plan(caches: list[dict[str, Any]], threads: int) -> list[dict[str, Any]]:
    """Which working set measures which level: [{"name", "capacity", "elems_per_thread"}]. A private
    cache (shared by fewer CPUs than threads run) holds half its size per thread; a shared one half
    its size over all threads; the last level is called LLC; DRAM is far past it."""
    plan = []
    for i, c in enumerate(caches):
        private = c["shared_by"] < threads or c["shared_by"] == 1
        capacity = c["bytes"] * (threads if private else 1)  # what the threads hold together
        per_thread = (c["bytes"] if private else c["bytes"] / threads) / 2 / 3  # triad's 3 arrays in half
        name = "LLC" if i == len(caches) - 1 and len(caches) > 1 else c["name"]
        plan.append({"name": name, "capacity": int(capacity), "elems_per_thread": int(per_thread // 4)})
    llc = max((c["bytes"] for c in caches), default=32 * 2**20)
    dram_total = min(max(2 * llc, 256 * 2**20), available_bytes() // 4)
    plan.append({"name": "DRAM", "capacity": 0, "elems_per_thread": int(dram_total / threads / 3 // 4)})
    return plan


def measure_gpu(dtype: str = "float32", device: str = "cuda") -> dict[str, Any]:
    """{"gflops", "levels": [{"name", "capacity", "copy"}], "name"} of the torch device (gpu only)."""
    import torch

    if dtype not in GPU_DTYPES:
        raise ValueError(f"dtype {dtype!r}: the GPU roof measures {', '.join(GPU_DTYPES)}")
    dev = torch.device(device)
    old_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32 FMAs, not tensor-core TF32

    def best(fn, reps: int = 5) -> float:
        fn()
        torch.cuda.synchronize(dev)
        times = []
        for _ in range(reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize(dev)
            times.append(s.elapsed_time(e) / 1e3)
        return min(times)

    try:
        n = 8192
        dt = getattr(torch, dtype)
        a, b = torch.randn(n, n, device=dev, dtype=dt), torch.randn(n, n, device=dev, dtype=dt)
        gflops = 2 * n**3 / best(lambda a=a, b=b: torch.mm(a, b)) / 1e9
        a = b = None  # free before the copies
        props = torch.cuda.get_device_properties(dev)
        l2 = int(getattr(props, "L2_cache_size", 0) or 0)
        levels = []
        for name, nbytes, cap in (("L2", l2 // 4, l2), ("DRAM", 2**30, 0)):
            if nbytes <= 0:
                continue
            x = torch.empty(nbytes // 4, device=dev, dtype=torch.float32).fill_(1.0)
            y = torch.empty_like(x)
            reps = max(1, int(2**30 // max(nbytes, 1)))  # an L2-sized copy is repeated: one launch is too short
            t = best(lambda x=x, y=y, reps=reps: [y.copy_(x) for _ in range(reps)])
            levels.append({"name": name, "capacity": cap, "copy": 2 * nbytes * reps / t / 1e9})
            del x, y
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old_tf32
    return {"gflops": gflops, "levels": levels, "name": torch.cuda.get_device_name(dev)}
