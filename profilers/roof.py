"""A task's distance from the machine's roof: its speed-of-light (SOL) time, the fraction of the roof
its measured time reaches, and SOL-ExecBench's score between a baseline and the roof.

The SOL time of a profiled program is the sum over its kernel calls of max(flops / peak FMA rate,
bytes / bandwidth of the level the kernel's working set fits in) (`KernelProfile.roof_s`, measured
peaks of `profilers.calibrate`). It is the roof of the candidate's own kernels: a candidate that fuses
two kernels drops their intermediate's bytes, so its roof is lower than its parent's. Importable
without TVM or torch (reports read it).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from profilers.report import ProfileReport


def sol_score(t_candidate: float, t_baseline: float, t_sol: float) -> float | None:
    """SOL-ExecBench's anchored score (Lin et al., "SOL-ExecBench: Speed-of-Light Benchmarking for
    Real-World GPU Kernels Against Hardware Limits", arXiv 2603.19173; its evaluator's `sol_score`):

        S = 1 / (1 + (t_candidate - t_sol) / (t_baseline - t_sol))

    so S = 1 at the roof (t_candidate = t_sol), 0.5 at the baseline, between 0.5 and 1 for the part
    of the baseline's gap to the roof that the candidate closed (hyperbolic, not linear, in time),
    below 0.5 for a slower candidate, towards 0 as it gets slower still. Clipped: a candidate measured
    under its roof (the roof model under-counts, e.g. a working set placed in a faster level than
    its bytes suggest) scores 1, never more. None where the score has no meaning: a missing or
    non-positive time, or a baseline at or under the roof (no gap to close; SOL-ExecBench then
    returns 0 or 1, which would read as a verdict on the candidate)."""
    if not (t_candidate and t_baseline and t_sol) or min(t_candidate, t_baseline, t_sol) <= 0:
        return None
    gap = t_baseline - t_sol
    if gap <= 0:
        return None
    return min(1.0, 1.0 / (1.0 + (t_candidate - t_sol) / gap))


class TaskRoof(BaseModel):
    """One program's place under the roof (per iteration)."""

    roof_s: float  # SOL time
    measured_s: float  # the time it is compared with (the judge's, when given)
    fraction: float  # roof_s / measured_s: 1 = at the roof
    flops: float
    bytes: float
    compute_s: float  # sum of the kernels' flops / peak: the part of the roof the FMA units set
    memory_s: float  # sum of bytes / level bandwidth
    peaks_key: str = ""  # whose roof (Peaks.cpu) and how it was had (measured / cache / table)
    peaks_source: str = ""
    sol: float | None = None  # sol_score against `baseline_s`, when given
    baseline_s: float | None = None

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"


def work_flops(report: ProfileReport | dict[str, Any] | None) -> float | None:
    """A profile's FLOPs per call of the whole program (its kernels' flops x calls); None without one."""
    if isinstance(report, dict):
        report = ProfileReport.model_validate(report) if "kernels" in report else None
    if report is None or not report.kernels:
        return None
    return float(sum(k.flops * k.calls for k in report.kernels))


def task_roof(report: ProfileReport | dict[str, Any] | None, measured_s: float | None = None,
              baseline_s: float | None = None, task_flops: float | None = None) -> TaskRoof | None:
    """The program's roof from its profile; `measured_s`: its judged time (EvalResult.t_candidate_s,
    per call of the whole program), else the profile's own iteration time; `baseline_s`: the
    baseline's judged time, for the SOL score. None without a profile with roofs (failed, old).
    `task_flops`: the task's work as its root program counts it (`work_flops` of the root's profile).
    Where the candidate's kernels count more, their compute is scaled down to it: fast_math's GELU
    polynomial counts 38 operations an element where the root's tanh counted 8, and credited as work
    they put the candidate past 100% of a roof it had not reached. Fewer FLOPs than the root (work
    removed) keep the candidate's own count."""
    if isinstance(report, dict):
        if "kernels" not in report:
            return None
        report = ProfileReport.model_validate(report)
    if report is None or not report.kernels or report.roof_s <= 0:
        return None
    t = measured_s if measured_s and measured_s > 0 else report.measured_s
    if t <= 0:
        return None
    pk = report.peaks
    total = sum(k.flops * k.calls for k in report.kernels)
    scale = min(1.0, task_flops / total) if task_flops and total > 0 else 1.0
    comp = sum(k.calls * scale * k.flops / (pk.gflops * 1e9) for k in report.kernels) if pk and pk.gflops else 0.0
    mem = 0.0
    roof = report.roof_s
    if pk is not None:
        kern_roof = 0.0
        for k in report.kernels:
            _, bw = pk.level_for(k.bytes)
            k_mem = k.calls * k.bytes / (bw * 1e9) if bw else 0.0
            mem += k_mem
            kern_roof += max(k.calls * scale * k.flops / (pk.gflops * 1e9) if pk.gflops else 0.0, k_mem)
        if scale < 1.0 and kern_roof > 0:
            roof = kern_roof
    return TaskRoof(roof_s=roof, measured_s=t, fraction=roof / t,
                    flops=scale * total,
                    bytes=float(sum(k.bytes * k.calls for k in report.kernels)), compute_s=comp, memory_s=mem,
                    peaks_key=pk.cpu if pk else "", peaks_source=pk.source if pk else "",
                    sol=sol_score(t, baseline_s, roof) if baseline_s else None, baseline_s=baseline_s)


def fmt_fraction(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}" if x < 0.1 else f"{x:.0%}"


def fmt_sol(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"
