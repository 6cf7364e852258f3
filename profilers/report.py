"""The profile of one built candidate, as data (pydantic) and as a short text for prompts."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from leka.core.types import COMPUTE_KINDS, KernelKind
from leka.core.types import KERNEL_KINDS as KINDS
from profilers.calibrate import Peaks

Kind = KernelKind
__all__ = ["COMPUTE_KINDS", "KINDS", "Kind", "SMALL_KERNEL_S", "BuiltinProfile", "KernelProfile", "ProfileReport"]

# A kernel this short per call is dominated by call overhead, not by its own work (L0 evidence:
# many such kernels want fusing).
SMALL_KERNEL_S = 20e-6


def _mib(b: int) -> str:
    return f"{b / 2**20:.1f} MiB"


class KernelProfile(BaseModel):
    name: str
    seconds: float  # per iteration of the whole model (all calls of this kernel)
    share: float  # of the summed time of every VM call (kernels + builtins)
    calls: int
    flops: float  # per call
    bytes: int  # compulsory bytes per call (buffer parameters)
    gflops: float
    gbps: float
    intensity: float  # flops / byte
    roof_gflops: float  # min(peak compute, intensity x the bandwidth of its level)
    roof_fraction: float  # roof time / measured time of a call (= achieved / roof rate)
    roof_s: float = 0.0  # speed-of-light time of one call: max(flops / peak, bytes / level bandwidth)
    level: str = "DRAM"  # the memory level its working set (bytes) fits in (Peaks.level_for)
    bound: Literal["compute", "memory"]
    kind: str
    vector_insns: int | None = None  # packed fp arithmetic on ymm/zmm in the kernel's asm (CPU)
    vector_fma: int | None = None  # of those, packed FMAs
    scalar_fma: int | None = None
    scheduled: bool = False  # has an L1 entry in the candidate
    l2_override: bool = False  # its code is an L2 source override (ISA counts then unknown)
    flops_source: str = "tvm"
    # set by the router, not the profiler (agents/hw_sensing.py mark_near_roof): at or above the run's
    # near-roof fraction, so no evaluation is spent on making it faster
    at_roof: bool = False

    @property
    def per_call_s(self) -> float:
        return self.seconds / max(self.calls, 1)


class BuiltinProfile(BaseModel):
    name: str
    seconds: float
    calls: int


class ProfileReport(BaseModel):
    kernels: list[KernelProfile] = Field(default_factory=list)  # hottest first
    builtins: list[BuiltinProfile] = Field(default_factory=list)  # vm.builtin.* (alloc, reshape...)
    total_s: float = 0.0  # wall time of one instrumented iteration
    kernel_count: int = 0  # kernel launches per iteration (calls, not distinct kernels)
    layout_share: float = 0.0
    small_kernel_count: int = 0
    planned_bytes: int | None = None  # intermediates after static memory planning
    peak_rss_bytes: int | None = None  # of the process that ran the profile
    peaks: Peaks | None = None
    backend: str = "llvm"

    def hottest(self, kind: str | tuple[str, ...] | None = None) -> KernelProfile | None:
        """The kernel with the largest time share, optionally of the given kind(s)."""
        kinds = (kind,) if isinstance(kind, str) else kind
        for k in self.kernels:
            if kinds is None or k.kind in kinds:
                return k
        return None

    @property
    def roof_s(self) -> float:
        """Speed-of-light time of one iteration: every kernel call at its roof (profilers/roof.py)."""
        return sum(k.roof_s * k.calls for k in self.kernels)

    @property
    def measured_s(self) -> float:
        """The iteration's measured time: its wall time, or the kernels' sum where that is larger."""
        return max(self.total_s, sum(k.seconds for k in self.kernels))

    def share_of(self, *kinds: str) -> float:
        return sum(k.share for k in self.kernels if k.kind in kinds)

    def text(self, max_kernels: int = 8) -> str:
        """A few lines an agent can read: totals, roofs, and the hottest kernels."""
        head = [f"total {self.total_s * 1e3:.3f} ms/iter, {self.kernel_count} kernel calls "
                f"({len(self.kernels)} distinct, {self.small_kernel_count} under "
                f"{SMALL_KERNEL_S * 1e6:.0f} us), layout copies {self.layout_share:.0%} of time"]
        mem = []
        if self.planned_bytes is not None:
            mem.append(f"planned intermediates {_mib(self.planned_bytes)}")
        if self.peak_rss_bytes is not None:
            mem.append(f"peak RSS {_mib(self.peak_rss_bytes)}")
        if self.peaks is not None:
            mem.append(f"roofs {self.peaks.gflops:.0f} GFLOP/s, {self.peaks.gbps:.1f} GB/s DRAM "
                       f"({self.peaks.source}, {self.peaks.cpu})")
        if self.roof_s > 0 and self.measured_s > 0:
            mem.append(f"task at {self.roof_s / self.measured_s:.1%} of its roof "
                       f"({self.roof_s * 1e3:.3f} ms at the roof)")
        if mem:
            head.append(", ".join(mem))
        rows = [f"{'kernel':44s} {'kind':14s} {'share':>5s} {'ms':>8s} {'calls':>5s} "
                f"{'GFLOP/s':>8s} {'GB/s':>6s} {'%roof':>6s} {'bound':7s} {'level':5s} {'vFMA':>5s} sched"]
        for k in self.kernels[:max_kernels]:
            vf = "-" if k.vector_fma is None else str(k.vector_fma)
            rows.append(f"{k.name[:44]:44s} {k.kind:14s} {k.share:5.0%} {k.seconds * 1e3:8.3f} "
                        f"{k.calls:5d} {k.gflops:8.2f} {k.gbps:6.2f} {k.roof_fraction:6.1%} "
                        f"{k.bound:7s} {k.level:5s} {vf:>5s} {'yes' if k.scheduled else 'no'}")
        if len(self.kernels) > max_kernels:
            rest = self.kernels[max_kernels:]
            rows.append(f"... {len(rest)} more kernels, {sum(k.share for k in rest):.0%} of time")
        return "\n".join(head + rows)
