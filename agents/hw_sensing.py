"""Hardware-sensing router: which level (L0 graph, L1 schedule, L2 target source) owns the bottleneck.

docs/DESIGN.md "Routing": L0 for layout transposes, many small kernels, large intermediates and unfused
elementwise chains; L1 for a hot kernel far from its roofline with no schedule yet; L2 for a hot kernel
that already has a schedule but whose code is scalar (no packed FMAs in its asm). In `profile` mode
each level gets a score in [0, 1] from the ProfileReport (a time share, weighted by how far from its
roof the time is spent) and the best enabled level wins, with the evidence as the reason; a level
the run has not tried gets an exploration bonus, and after COVERAGE_EVALS evaluations it is routed
to outright (so a short Level-3 run still tries every enabled level). The other
modes exist for ablations: `round_robin`, `random` (own `random.Random(seed)`), `fixed:<level>`.
Routers make no edits; `route` is the loop's entry point (leka.core.protocols.Router: level and reason),
`decide` the same decision with its scores, `propose` returns [] to satisfy the Agent protocol.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from leka.core.config import NEAR_ROOF
from leka.core.levels import LEVEL_SPECS, behaviour, level_names, routing_modes
from leka.core.protocols import AgentContext
from leka.core.types import Edit
from profilers.report import COMPUTE_KINDS, SMALL_KERNEL_S, ProfileReport

# Heuristic weights: how strongly each kind of evidence argues for its level, relative to the L1
# baseline (share x distance from the roof of an unscheduled hot kernel = weight 1).
W_RETUNE = 0.35  # L1 again on a kernel that already has a schedule
# with MetaSchedule as an L1 tool (config `tuner`, agents/l1_tune.py): a scheduled hot kernel far from
# its roof is the tool's job, ranked above a micro-kernel attempt (W_L2_GEMM_GAP)
W_TUNE = 0.6
W_L2_VECTOR_OK = 0.3  # L2 on a scheduled kernel that is already vectorised
W_L2_ISA_UNKNOWN = 0.6  # L2 on a scheduled kernel whose code we cannot inspect (GPU)
W_L2_PREMATURE = 0.1  # L2 before the kernel has any schedule
W_L2_GEMM_GAP = 0.5  # L2 on a scheduled, vectorised GEMM-like kernel still far below its compute roof
GEMM_KINDS = ("matmul", "batch_matmul", "conv")
GEMM_GAP_ROOF = 0.5  # under this fraction of the compute roof a hand-written micro-kernel is worth a try
W_UNFUSED = 0.8  # separate elementwise kernels: fusion/folding removes their whole round trip
MANY_CALLS = 8  # kernel calls per iteration from which call overhead is worth an L0 look
LARGE_INTERMEDIATES = 32 * 2**20  # bytes: past the last-level cache of an edge CPU
W_LARGE = 0.2
W_NOVELTY = 0.15  # bonus for a level with no node in the run yet (context.extra["level_counts"])
# Coverage: once the run has made this many evaluations (context.extra["evals"]), an enabled level with
# no node at all is routed to before any profile evidence. At Level 3 an evaluation takes ~20 s, so a
# few-minute budget holds about a dozen, and the many unscheduled kernels would keep L1 on top of the
# scores for all of them; a level whose payoff only shows once tried (an NHWC graph, a micro-kernel)
# then never gets its chance. Four = the root plus one expansion of the level the profile chose.
COVERAGE_EVALS = 4
# a kernel at or above NEAR_ROOF of its measured roof gets no more evaluations (config router.near_roof)
# check failures a graph-level rewrite can repair (the numbers are wrong, the program runs)
NUMERIC_FAILURES = ("nan", "mismatch")


class Route(BaseModel):
    level: str
    reason: str
    scores: dict[str, float] = Field(default_factory=dict)
    mode: str = "profile"


def parse_layers(layers: str | Sequence[str]) -> tuple[str, ...]:
    """"L0,L1" or ["L0", "L1"] -> ("L0", "L1") in level order; unknown or empty -> ValueError."""
    items = [x.strip() for x in (layers.split(",") if isinstance(layers, str) else layers) if x.strip()]
    bad = [x for x in items if x not in level_names()]
    if bad or not items:
        raise ValueError(f"layers {list(items)!r}: use a non-empty subset of {list(level_names())}")
    return tuple(lv for lv in level_names() if lv in items)


def _pct(x: float) -> str:
    return f"{x:.0%}" if x >= 0.01 or x == 0 else f"{x:.1%}"


def _gap(k) -> float:
    return 1.0 - min(1.0, max(0.0, k.roof_fraction))


def _where(k) -> str:
    return (f"hot kernel {k.name} ({_pct(k.share)} of time, {k.kind}) at {_pct(k.roof_fraction)} "
            f"of its {k.bound} roof")


def _score_l0(report: ProfileReport) -> tuple[float, str]:
    """Graph-level evidence; the strongest one speaks."""
    ev: list[tuple[float, str]] = [(0.0, "no graph-level evidence (no layout copies, few small kernels)")]
    layout = [k for k in report.kernels if k.kind == "layout"]
    if layout and report.layout_share > 0:
        ev.append((report.layout_share, f"layout copies (transpose/reshape) take {_pct(report.layout_share)}"
                   f" of time in {len(layout)} kernels ({layout[0].name} the largest)"))
    small_share = sum(k.share for k in report.kernels if k.per_call_s < SMALL_KERNEL_S)
    builtin_share = sum(b.seconds for b in report.builtins) / report.total_s if report.total_s > 0 else 0.0
    if report.kernel_count >= MANY_CALLS and report.small_kernel_count:
        s = min(1.0, small_share + builtin_share) * min(1.0, report.small_kernel_count / report.kernel_count)
        ev.append((s, f"{report.small_kernel_count} of {report.kernel_count} kernel calls run under "
                   f"{SMALL_KERNEL_S * 1e6:.0f} us ({_pct(small_share)} of time, plus {_pct(builtin_share)} "
                   f"in VM builtins): call overhead, fuse them"))
    elementwise = [k for k in report.kernels if k.kind == "injective"]
    if len(elementwise) >= 1 and any(k.kind in COMPUTE_KINDS for k in report.kernels):
        share = sum(k.share for k in elementwise)
        ev.append((W_UNFUSED * share, f"{sum(k.calls for k in elementwise)} separate elementwise kernel calls "
                   f"({elementwise[0].name} the largest) take {_pct(share)} of time: unfused epilogues "
                   f"(fold BN / fuse into the producer)"))
    if report.planned_bytes and report.planned_bytes > LARGE_INTERMEDIATES:
        ev.append((W_LARGE, f"{report.planned_bytes / 2**20:.0f} MiB of planned intermediates: "
                   f"large tensors between kernels"))
    return max(ev, key=lambda e: e[0])


def _score_l1(movers: list, tuner: bool) -> tuple[float, str]:
    """Unscheduled kernels far from their roofs (the L1 agent schedules the hottest few)."""
    todo = [k for k in movers if not k.scheduled and not k.l2_override]
    l1 = (0.0, "no compute kernel without a schedule")
    if todo:
        s = sum(k.share * _gap(k) for k in todo)
        more = f"; {len(todo) - 1} more unscheduled kernels, {_pct(sum(k.share for k in todo))} in all" \
            if len(todo) > 1 else ""
        l1 = (s, f"{_where(todo[0])}, no schedule yet{more}")
    hot = movers[0] if movers else None
    if hot is not None and hot.scheduled and W_RETUNE * hot.share * _gap(hot) > l1[0]:
        l1 = (W_RETUNE * hot.share * _gap(hot), f"{_where(hot)}, already scheduled: re-tune its schedule")
    if tuner and hot is not None and hot.scheduled and W_TUNE * hot.share * _gap(hot) > l1[0]:
        l1 = (W_TUNE * hot.share * _gap(hot), f"{_where(hot)}, scheduled: search around its schedule with "
              "MetaSchedule (the L1 tool)")
    return l1


def _score_l2(hot) -> tuple[float, str]:
    """The hottest kernel, once it has a schedule, judged by its own instructions."""
    if hot is None:
        return (0.0, "no compute kernel in the profile")
    weight = hot.share * _gap(hot)
    if hot.l2_override:
        return (W_L2_VECTOR_OK * weight, f"{_where(hot)}, already has an L2 source override")
    if not hot.scheduled:
        return (W_L2_PREMATURE * weight, f"{_where(hot)}, no schedule yet: a source override is premature")
    expects_fma = hot.kind in COMPUTE_KINDS
    if hot.vector_fma is None:
        return (W_L2_ISA_UNKNOWN * weight, f"{_where(hot)}, scheduled; its instructions cannot be inspected")
    if (expects_fma and hot.vector_fma == 0) or (not expects_fma and (hot.vector_insns or 0) == 0):
        what = (f"no packed FMAs in its asm ({hot.scalar_fma} scalar FMAs)" if expects_fma
                else "no packed vector arithmetic in its asm")
        return (weight, f"{_where(hot)}, scheduled but scalar: {what}")
    if hot.kind in GEMM_KINDS and hot.bound == "compute" and hot.roof_fraction < GEMM_GAP_ROOF:
        # vector FMAs are there, but register blocking / packing is what closes a gap this size
        return (W_L2_GEMM_GAP * weight, f"{_where(hot)}, scheduled and vectorised ({hot.vector_fma} packed "
                f"FMAs) but far below its compute roof: try a register-blocked micro-kernel")
    return (W_L2_VECTOR_OK * weight, f"{_where(hot)}, scheduled and vectorised ({hot.vector_fma} packed "
            f"FMAs, {hot.vector_insns} packed ops)")


def _movers(report: ProfileReport) -> list:
    """The kernels that compute (layout copies are L0's evidence), hottest first; a kernel at its
    roof (`at_roof`, mark_near_roof) is no evidence for L1 or L2: making it faster is not possible."""
    return [k for k in report.kernels if k.kind != "layout" and not k.at_roof]


def mark_near_roof(report: ProfileReport, near_roof: float = NEAR_ROOF) -> ProfileReport:
    """A copy of `report` whose kernels at or above `near_roof` of their roof are marked `at_roof`.
    Evaluations then go by time share x distance from the roof (every score's weight is share x
    (1 - roof fraction)), and none to a marked kernel. L0's evidence keeps them: fusing a kernel that
    is at its roof still removes its whole time."""
    kernels = [k.model_copy(update={"at_roof": k.roof_fraction >= near_roof}) for k in report.kernels]
    return report.model_copy(update={"kernels": kernels})


def roof_gap_note(report: ProfileReport) -> str:
    at = [k for k in report.kernels if k.at_roof and k.kind != "layout"]
    if not at:
        return ""
    return (f" [{len(at)} kernel(s) at their roof, left alone: {at[0].name} at {_pct(at[0].roof_fraction)}, "
            f"{_pct(sum(k.share for k in at))} of time]")


# the level table's scores (LevelSpec.score): (report, tuner) -> (score, evidence)
def score_l0(report: ProfileReport, tuner: bool = False) -> tuple[float, str]:
    return _score_l0(report)


def score_l1(report: ProfileReport, tuner: bool = False) -> tuple[float, str]:
    return _score_l1(_movers(report), tuner)


def score_l2(report: ProfileReport, tuner: bool = False) -> tuple[float, str]:
    movers = _movers(report)
    return _score_l2(movers[0] if movers else None)


def score_levels(report: ProfileReport, tuner: bool = False) -> dict[str, tuple[float, str]]:
    """{level: (score, evidence)} from a profile, each by its level's own score (LevelSpec.score);
    every level gets a score and a reason. `tuner`: the L1 agent has MetaSchedule as a tool (then a
    scheduled hot kernel argues for L1 with W_TUNE)."""
    return {lv: behaviour(spec, "score")(report, tuner) for lv, spec in LEVEL_SPECS.items()}


class HardwareSensingAgent:
    """Routes a candidate to the level that owns its bottleneck. Deterministic for a seed."""

    level = "router"

    def __init__(self, mode: str = "profile", layers: str | Sequence[str] | None = None, seed: int = 0,
                 near_roof: float = NEAR_ROOF):
        if not 0.0 < near_roof <= 1.0:
            raise ValueError(f"near_roof {near_roof}: a fraction of the roof in (0, 1]")
        self.near_roof = near_roof
        if mode not in routing_modes():
            raise ValueError(f"unknown routing mode {mode!r}; use one of {', '.join(routing_modes())}")
        self.mode = mode
        self.layers = parse_layers(level_names() if layers is None else layers)
        self.seed = seed
        if mode.startswith("fixed:") and mode.split(":", 1)[1] not in self.layers:
            raise ValueError(f"mode {mode} routes to a level not in layers {list(self.layers)}")
        self._pos = 0  # round_robin: the next index into self.layers
        self._draws = 0  # random: draws made, so a resumed run can replay its generator
        self._rng = random.Random(seed)

    # ------------------------------------------------------------------ state (for --resume)
    def state(self) -> dict[str, Any]:
        return {"mode": self.mode, "layers": list(self.layers), "seed": self.seed, "pos": self._pos,
                "draws": self._draws}

    def load_state(self, state: dict[str, Any]) -> None:
        if not state:  # a run's first route: nothing checkpointed yet
            return
        if state.get("mode", self.mode) != self.mode or tuple(state.get("layers", self.layers)) != self.layers:
            raise ValueError(f"router state is for mode {state.get('mode')} layers {state.get('layers')}, "
                             f"not {self.mode} {list(self.layers)}")
        self.seed = int(state.get("seed", self.seed))
        self._pos = int(state.get("pos", 0))
        self._rng = random.Random(self.seed)
        self._draws = 0
        for _ in range(int(state.get("draws", 0))):
            self._draw()

    def _draw(self) -> str:
        self._draws += 1
        return self._rng.choice(self.layers)

    # ------------------------------------------------------------------ routing
    def route(self, candidate, profile: ProfileReport | dict | None,
              context: AgentContext | None = None) -> tuple[str, str]:
        r = self.decide(candidate, profile, context)
        return r.level, r.reason

    def decide(self, candidate, report: ProfileReport | dict | None, context: AgentContext | None = None) -> Route:
        if self.mode.startswith("fixed:"):
            lv = self.mode.split(":", 1)[1]
            return Route(level=lv, reason=f"fixed routing to {lv}", mode=self.mode)
        if self.mode == "round_robin":
            lv = self.layers[self._pos % len(self.layers)]
            self._pos += 1
            return Route(level=lv, reason=f"round robin over {','.join(self.layers)}: {lv}", mode=self.mode)
        if self.mode == "random":
            lv = self._draw()
            return Route(level=lv, reason=f"random (seed {self.seed}, draw {self._draws}): {lv}", mode=self.mode)
        return self._route_profile(report, context)

    def _route_profile(self, report: ProfileReport | dict | None, context: AgentContext | None) -> Route:
        if isinstance(report, dict):
            report = ProfileReport.model_validate(report)
        if report is None or not report.kernels:
            failed = context.extra.get("failed") if context is not None else None
            excluded = set((context.extra.get("exclude_levels", []) if context is not None else []) or [])
            if failed in NUMERIC_FAILURES and "L0" in self.layers and "L0" not in excluded:
                # a wrong result (not a crash) that every schedule below would inherit: e.g. a root whose
                # pow(x, 2) is NaN for negative x under CUDA's fast math; a graph rewrite changes the math
                return Route(level="L0", mode=self.mode,
                             reason=f"the candidate failed its check ({failed}), no profile: L0 first, a graph "
                                    "rewrite (pow -> multiply, decomposition) changes the arithmetic itself")
            lv = "L1" if "L1" in self.layers else self.layers[0]
            return Route(level=lv, reason=f"no profile to read: default {lv}", mode=self.mode)
        report = mark_near_roof(report, self.near_roof)
        scored = score_levels(report, tuner=bool(context is not None and context.extra.get("tuner")))
        note = roof_gap_note(report)
        if note:
            scored = {lv: (s0, why + note) for lv, (s0, why) in scored.items()}
        # exploration across levels: a level the run has not tried at all gets a bonus, so a level
        # whose payoff only shows once tried (an L2 micro-kernel after L1 tiling) is not starved
        counts = (context.extra.get("level_counts") if context is not None else None) or {}
        if counts:
            for lv in self.layers:
                if counts.get(lv, 0) == 0:
                    s0, why = scored[lv]
                    scored[lv] = (s0 + W_NOVELTY, f"{why} [+{W_NOVELTY} exploration: no {lv} node yet]")
        scores = {lv: round(s, 4) for lv, (s, _) in scored.items()}
        # levels whose agents already came back empty for this candidate are tried last
        excluded = set((context.extra.get("exclude_levels", []) if context is not None else []) or [])
        enabled = [lv for lv in self.layers if lv not in excluded] or list(self.layers)
        evals = int((context.extra.get("evals") if context is not None else 0) or 0)
        untried = [lv for lv in enabled if counts and counts.get(lv, 0) == 0]
        if untried and evals >= COVERAGE_EVALS:
            lv = untried[0]  # upper level first: an L0 change rebuilds the levels below it anyway
            top = max(enabled, key=lambda x: (scored[x][0], -level_names().index(x)))
            return Route(level=lv, scores=scores, mode=self.mode,
                         reason=f"coverage: no {lv} node after {evals} evaluations; {lv} evidence: "
                                f"{scored[lv][1]} (the profile favours {top}) -> {lv}")
        # ties go to the upper level: an L0 change rebuilds everything below it anyway
        best = max(enabled, key=lambda lv: (scored[lv][0], -level_names().index(lv)))
        reason = f"{scored[best][1]} -> {best}"
        overall = max(level_names(), key=lambda lv: (scored[lv][0], -level_names().index(lv)))
        if overall != best and scored[overall][0] > scored[best][0]:
            why = "switched off" if overall not in self.layers else "already tried"
            reason += f" ({overall} scored higher but is {why})"
        return Route(level=best, reason=reason, scores=scores, mode=self.mode)

    def propose(self, candidate, context: AgentContext) -> list[Edit]:
        return []  # a router makes no edits
