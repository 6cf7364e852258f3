"""The memory an evaluation needs, and the cap it runs under (README "Evaluator protocol", Memory).

An evaluation holds a task's parameters, one seed's inputs and one seed's outputs at a time (the check
goes seed by seed, the references are read memory-mapped from the reference process's files), so it
needs about `BASE_BYTES + NEED_FACTOR x (params + inputs + outputs)`. The cap: `evaluator.memory_cap_gb`
when set; otherwise `BASE_BYTES + CAP_FACTOR x (...)` (a margin over the need), at least `MIN_CAP_GB` (what every evaluation had before: the largest
builds of the suite fit under it), at most `MACHINE_SHARE` of this machine's memory. A task whose need
is over its cap is refused in one line before anything is built. No TVM here.
"""

from __future__ import annotations

from dataclasses import dataclass

import psutil

GiB = 2**30
BASE_BYTES = int(0.75 * GiB)  # an evaluation child with torch and TVM loaded (0.4 GiB measured on a tiny task) and a build
NEED_FACTOR = 3  # params, inputs and one output set: host copies, device copies, the baseline's
# the derived cap leaves a margin over the need: a 32768 x 32768 output (4 GiB) peaked at 3.2x (its
# memory-mapped reference pages count in the child's RSS) and was killed under a 3x cap
CAP_FACTOR = 4
MIN_CAP_GB = 8.0
MACHINE_SHARE = 0.75
# output sets the timing holds with TVM's pooled allocator (a freed buffer stays in the pool): per
# arm, the C++ loop's ring of hold_for(2) = 2 outputs and the call's new one (measured: 4 sets resident
# after two samples of two calls each, 5-6 in longer samples)
POOLED_TIMING_OUTPUTS = 6
# lean timing (naive allocator, no ring) holds 3 output sets: the candidate VM's last output and its
# new one, the baseline VM's last output (a VM keeps its last return value until its next call returns)
LEAN_INPUT_SETS = 3


@dataclass(frozen=True)
class Footprint:
    params: int
    inputs: int  # one seed's
    outputs: int  # one seed's

    @property
    def need(self) -> int:
        return BASE_BYTES + NEED_FACTOR * (self.params + self.inputs + self.outputs)

    @property
    def allowance(self) -> int:
        return BASE_BYTES + CAP_FACTOR * (self.params + self.inputs + self.outputs)

    def text(self) -> str:
        return (f"params {self.params / GiB:.2f} + inputs {self.inputs / GiB:.2f} + outputs "
                f"{self.outputs / GiB:.2f} GiB")


def machine_bytes() -> int:
    return int(psutil.virtual_memory().total)


def cap_bytes(cap_gb: float | None, fp: Footprint | None = None) -> tuple[int, str]:
    """(cap, where it comes from): the configured cap, else derived from the footprint and this machine
    (without a footprint: the machine's share, the ceiling of any derived cap)."""
    if cap_gb is not None:
        return int(cap_gb * GiB), "evaluator.memory_cap_gb"
    machine = int(machine_bytes() * MACHINE_SHARE)
    where = f"{MACHINE_SHARE:.0%} of this machine's {machine_bytes() / GiB:.0f} GiB"
    if fp is None:
        return machine, where
    cap = min(machine, max(int(MIN_CAP_GB * GiB), fp.allowance))
    return cap, (where if cap == machine else "derived from the task's footprint (evaluator.memory_cap_gb unset)")


def refusal(fp: Footprint, cap_gb: float | None) -> str | None:
    """One line when the task cannot fit under its cap, else None."""
    cap, where = cap_bytes(cap_gb, fp)
    if fp.need <= cap:
        return None
    return (f"the task needs about {fp.need / GiB:.1f} GiB ({BASE_BYTES / GiB:.1f} GiB + {NEED_FACTOR} x "
            f"({fp.text()})), over the memory cap of {cap / GiB:.1f} GiB ({where})")


@dataclass(frozen=True)
class TimingPlan:
    """How the timing holds memory. Standard: TVM's pooled allocator, `hold_for(n_sets)` outputs kept
    alive per arm (call_loop: the buffer a call gets last held another input set's result). Lean, for a
    task whose outputs would not fit standard timing under its cap: the naive allocator (freed outputs
    go back at once) and no ring. Its calls still never find another call's result for their own
    inputs: the buffer a call gets was freed by one of the two calls before it, each on another of the 3
    rotating sets (tests/test_evaluator_integrity.py: the output-peeking kernel gains nothing), and
    an output of the sizes that make a task lean (hundreds of MiB) is a fresh mmap of zeroed pages
    (glibc maps every allocation over 32 MiB)."""

    lean: bool
    n_sets: int | None  # None: evaluator.timing_input_sets
    hold: int | None  # None: call_loop.hold_for(n_sets)
    memory_cfg: str | None  # the VMs' allocator (None: TVM's default, pooled)
    why: str = ""


STANDARD = TimingPlan(False, None, None, None)


def timing_plan(fp: Footprint, cap_gb: float | None, mode: str = "auto") -> TimingPlan:
    """`mode` (evaluator.timing_memory): auto = lean only where the standard timing would pass the cap."""
    how = f"naive allocator, no held outputs, {LEAN_INPUT_SETS} input sets"
    if mode == "lean":
        return TimingPlan(True, LEAN_INPUT_SETS, 0, "naive", f"lean timing (evaluator.timing_memory=lean): {how}")
    if mode != "auto":
        return STANDARD
    cap, _ = cap_bytes(cap_gb, fp)
    pooled = BASE_BYTES + fp.params + 3 * fp.inputs + POOLED_TIMING_OUTPUTS * fp.outputs
    if pooled <= cap:
        return STANDARD
    return TimingPlan(True, LEAN_INPUT_SETS, 0, "naive",
                      f"lean timing: {POOLED_TIMING_OUTPUTS} output sets of {fp.outputs / GiB:.2f} GiB in TVM's "
                      f"pool would pass the cap of {cap / GiB:.1f} GiB; {how}")
