"""Metrics over a task set (EdgeKernelBench): Compile@1, Correct@1, Fast@p, geometric-mean speedup.

Fast@p counts a task only if it is correct, validly timed and faster than p x the baseline with
confidence: the lower bound of its speedup's interval is above p (`EvalResult.is_faster`; a point above
p whose interval reaches below p is not counted). It divides by *all* tasks in the set (a task that
failed to compile counts against the method), and comes with a Wilson score interval over tasks.

The geomean's interval is a bootstrap over tasks of the per-task point speedups
(`benchmark.judge.stats.geomean_interval`), not a propagation of each task's timing interval: what varies a
suite's geomean is which tasks it holds (tasks differ by far more than one task's timing noise), and
a per-task interval is already inside that spread. Loaded evaluations (the machine was busy during
their timing, extra["machine_load"]) are counted next to the metrics."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

from benchmark.judge import LEVEL, geomean, geomean_interval
from leka.core.types import EvalResult


def compile_at_1(results: Sequence[EvalResult]) -> float:
    return sum(r.compiled for r in results) / len(results) if results else 0.0


def correct_at_1(results: Sequence[EvalResult]) -> float:
    return sum(r.correct for r in results) / len(results) if results else 0.0


def fast_at(results: Sequence[EvalResult], p: float = 1.0) -> float:
    if not results:
        return 0.0
    return sum(1 for r in results if r.is_faster(p)) / len(results)


def wilson(k: int, n: int, level: float = LEVEL) -> tuple[float, float, float] | None:
    """A rate k / n with its Wilson score interval (sound at the small n of a task set, and at 0 or n)."""
    if n <= 0:
        return None
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return p, max(0.0, mid - half), min(1.0, mid + half)


def fast_at_interval(results: Sequence[EvalResult], p: float = 1.0) -> tuple[float, float, float] | None:
    """Fast@p (lower bounds above p) with a Wilson interval over the tasks; None for no tasks."""
    return wilson(sum(1 for r in results if r.is_faster(p)), len(results))


def geomean_speedup(results: Sequence[EvalResult]) -> float | None:
    """Over correct, validly timed results only (None if there are none)."""
    return geomean([r.speedup for r in results if r.measured])


def geomean_speedup_interval(results: Sequence[EvalResult]) -> tuple[float, float | None, float | None] | None:
    """`geomean_speedup` with its bootstrap-over-tasks interval (None bounds with one task)."""
    return geomean_interval([r.speedup for r in results if r.measured and r.speedup])


def loaded_count(results: Sequence[EvalResult]) -> int:
    """Evaluations whose timing ran on a loaded machine (other processes' CPU or steal time)."""
    return sum(1 for r in results if r.loaded)


def summarize(results: Sequence[EvalResult], ps: Sequence[float] = (0.0, 1.0, 1.5, 2.0)) -> dict[str, float | None]:
    out: dict[str, float | None] = {"n": float(len(results)), "compile@1": compile_at_1(results),
                                    "correct@1": correct_at_1(results)}
    for p in ps:
        fi = fast_at_interval(results, p)
        out[f"fast@{p:g}"] = fi[0] if fi else 0.0
        out[f"fast@{p:g}_lo"], out[f"fast@{p:g}_hi"] = (fi[1], fi[2]) if fi else (None, None)
    gi = geomean_speedup_interval(results)
    out["geomean_speedup"], out["geomean_speedup_lo"], out["geomean_speedup_hi"] = gi if gi else (None, None, None)
    out["loaded"] = float(loaded_count(results))
    mems = [r.peak_memory_bytes for r in results if r.peak_memory_bytes]
    out["max_peak_memory_bytes"] = float(max(mems)) if mems else None
    return out
