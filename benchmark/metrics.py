"""Metrics over a task set (EdgeKernelBench): Compile@1, Correct@1, Fast@p, geometric-mean speedup.

Fast@p counts a task only if it is correct, validly timed and faster than p x the baseline, and divides
by *all* tasks in the set (a task that failed to compile counts against the method)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from leka.core.types import EvalResult


def compile_at_1(results: Sequence[EvalResult]) -> float:
    return sum(r.compiled for r in results) / len(results) if results else 0.0


def correct_at_1(results: Sequence[EvalResult]) -> float:
    return sum(r.correct for r in results) / len(results) if results else 0.0


def fast_at(results: Sequence[EvalResult], p: float = 1.0) -> float:
    if not results:
        return 0.0
    return sum(1 for r in results if r.measured and (r.speedup or 0.0) > p) / len(results)


def geomean(xs: Sequence[float | None]) -> float | None:
    """Geometric mean of the positive values (None and non-positive ones are skipped; None if none left)."""
    vals = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in vals) / len(vals)) if vals else None


def geomean_speedup(results: Sequence[EvalResult]) -> float | None:
    """Over correct, validly timed results only (None if there are none)."""
    return geomean([r.speedup for r in results if r.measured])


def summarize(results: Sequence[EvalResult], ps: Sequence[float] = (0.0, 1.0, 1.5, 2.0)) -> dict[str, float | None]:
    out: dict[str, float | None] = {"n": float(len(results)), "compile@1": compile_at_1(results),
                                    "correct@1": correct_at_1(results)}
    for p in ps:
        out[f"fast@{p:g}"] = fast_at(results, p)
    out["geomean_speedup"] = geomean_speedup(results)
    mems = [r.peak_memory_bytes for r in results if r.peak_memory_bytes]
    out["max_peak_memory_bytes"] = float(max(mems)) if mems else None
    return out
