"""No time under the physical floor (issue 43): a candidate timed faster than its task's speed-of-light
(SOL) time on this machine, with slack, has not found a speedup; the number is a measurement the
judge cannot explain (a timing exploit, work skipped because the reference is degenerate), and the
evaluation says so: `error_kind` `below_physical_floor`, `timing_valid` False (never counted as a
speedup: `EvalResult.measured`), the message carrying the measured time and the floor.

The floor is the task's, not the candidate's: TVM's FLOP count of the task's unscheduled root (each
PrimFunc times its calls per run) and its compulsory bytes (parameters + inputs + outputs, what any
program must read and write once), against the measured roof of `leka bench roof`
(`profilers.calibrate.peaks`): max(flops / peak FMA rate, bytes / bandwidth of the smallest level the
bytes fit in). A candidate's own kernels cannot lower it. The roof's per-kernel SOL
(`profilers/roof.py`) is higher (intermediates count there); this one is a lower bound on every
program that computes the task. `evaluator.floor_slack` says why it still gets slack.

Where no roof is cached (no `leka bench roof` and no profile ran here) the floor is unavailable and
said so in `extra["floor"]`: the judge never measures a roof itself, which would take the machine
for seconds in the middle of a grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from leka.core.types import EvalResult

# the FMA peak is measured at float32; narrower types run more lanes per instruction (AVX512-FP16,
# VNNI), so their compute term would not be a lower bound and only the memory term is kept
_FULL_WIDTH = ("float32", "float64")


@dataclass(frozen=True)
class Work:
    """What any program that computes the task must do per call."""

    flops: float
    bytes: int
    dtype: str = "float32"


@dataclass(frozen=True)
class Floor:
    sol_s: float
    compute_s: float
    memory_s: float
    level: str
    peaks_key: str
    peaks_source: str
    work: Work

    def as_dict(self) -> dict[str, Any]:
        return {"sol_s": self.sol_s, "compute_s": self.compute_s, "memory_s": self.memory_s,
                "level": self.level, "flops": self.work.flops, "bytes": self.work.bytes,
                "dtype": self.work.dtype, "roof": f"{self.peaks_key} ({self.peaks_source})"}


def task_floor(work: Work, pk) -> Floor:
    """The SOL time of `work` under the roof `pk` (profilers.calibrate.Peaks)."""
    compute = work.flops / (pk.gflops * 1e9) if pk.gflops and work.dtype in _FULL_WIDTH else 0.0
    level, bw = pk.level_for(work.bytes)
    memory = work.bytes / (bw * 1e9) if bw else 0.0
    return Floor(sol_s=max(compute, memory), compute_s=compute, memory_s=memory, level=level,
                 peaks_key=pk.cpu, peaks_source=pk.source, work=work)


def verdict(res: EvalResult, floor: Floor | None, slack: float) -> bool:
    """The floor's verdict on a timed result: records `extra["floor"]`, and where the candidate's time
    is under `slack` x the floor, turns the result into `below_physical_floor` (its speedup kept for the
    record, `timing_valid` False). True when it did. A result already failed, untimed or without a
    floor is left as it is; slack 0 records the floor and never fails."""
    if floor is None or res.t_candidate_s is None:
        return False
    bound = slack * floor.sol_s
    res.extra["floor"] = {**floor.as_dict(), "slack": slack, "t_candidate_s": res.t_candidate_s,
                          "fraction": floor.sol_s / res.t_candidate_s if res.t_candidate_s > 0 else None}
    if res.error_kind is not None or not res.correct or bound <= 0 or res.t_candidate_s >= bound:
        return False
    res.timing_valid = False
    res.error_kind = "below_physical_floor"
    res.error = (f"measured {res.t_candidate_s * 1e6:.3f} us a call, under the physical floor: SOL "
                 f"{floor.sol_s * 1e6:.3f} us x slack {slack:g} = {bound * 1e6:.3f} us "
                 f"({floor.work.flops:.4g} FLOP, {floor.work.bytes} B in {floor.level}; roof {floor.peaks_key}, "
                 f"{floor.peaks_source}); no honest program is that fast here: not a speedup "
                 "(evaluator.floor_slack; docs/threat_model.md)")
    return True


def root_work(task, root, backend: str, target, footprint) -> Work:
    """The task's work from its unscheduled root (a lowering, ~20 ms; no build)."""
    from leka import ir
    from leka import tvm_adapter as A
    from profilers.flops import describe

    lowered = ir.lower_layers(ir.root_candidate(task, backend, root), target, root.params).unscheduled
    calls = A.tir_call_counts(lowered)
    flops = sum(describe(f)["flops"] * calls.get(name, 0) for name, f in A.prim_funcs(lowered).items())
    dtype = root.outputs[0][1] if root.outputs else "float32"
    return Work(flops=float(flops), bytes=int(footprint.params + footprint.inputs + footprint.outputs),
                dtype=str(dtype))


def machine_floor(work: Work, backend: str, threads: int) -> tuple[Floor | None, str | None]:
    """(floor, None), or (None, why not) where no roof is cached for this machine and thread count."""
    from profilers.calibrate import peaks

    try:
        pk = peaks(backend, threads=threads, measure=False)
    except (FileNotFoundError, KeyError, ValueError) as e:
        return None, str(e)
    return task_floor(work, pk), None


def physical_floor(st) -> bool:
    """The worker's step after the timing (benchmark/judge/job.py STEPS): the floor's verdict on a timed
    evaluation. The floor is advice where it cannot be had (its failure recorded, never the
    evaluation's)."""
    res, cfg = st.res, st.cfg
    if res.t_candidate_s is None or st.root is None or st.footprint is None:
        return True
    try:
        work = root_work(st.task, st.root, st.backend, st.target, st.footprint)
        floor, why = machine_floor(work, st.backend, int(st.job.get("threads", 2)))
    except Exception as e:  # noqa: BLE001 - the floor is a check on top of the timing; its failure is data
        floor, why = None, f"{type(e).__name__}: {e}"[:300]
    if floor is None:
        res.extra["floor"] = {"unavailable": why}
        return True
    verdict(res, floor, float(cfg.get("floor_slack", 0.5)))
    return True
