"""The small interfaces every part of the loop agrees on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from leka.core.types import Edit, EvalResult

if TYPE_CHECKING:
    from leka.core.task import Task
    from leka.ir import Candidate


@dataclass
class AgentContext:
    """What an agent sees besides the candidate: small, textual, serialisable."""

    task_id: str
    backend: str
    level: str  # the level this call is routed to
    route_reason: str = ""
    profile: dict[str, Any] | None = None  # profilers' report as data
    profile_text: str = ""  # the same, short text for prompts
    lineage_text: str = ""  # what was tried on this branch and what it did
    tried: set[str] = field(default_factory=set)  # edit digests already in the tree: don't repeat
    seed: int = 0
    variants: int = 3
    vector_lanes: int = 16
    num_cores: int = 2
    extra: dict[str, Any] = field(default_factory=dict)
    # time.monotonic() at which the run's wall-clock budget ends: an agent's own long calls (a model,
    # a tuner) stop there. None: no deadline
    deadline: float | None = None


@runtime_checkable
class Agent(Protocol):
    """One per level (and the hardware-sensing router). Empty list / None = nothing to do here. An agent
    may say `widens = True`: once every node is exhausted, a widened round (context.extra["widen"],
    run.widen_rounds) gets more from it; the loop widens only for such agents."""

    level: str

    def propose(self, candidate: Candidate, context: AgentContext) -> list[Edit] | None: ...


@runtime_checkable
class Router(Protocol):
    """Picks the level for the next expansion of a node, with a reason a human can read."""

    def route(self, candidate: Candidate, profile: dict[str, Any] | None,
              context: AgentContext) -> tuple[str, str]: ...

    def state(self) -> dict[str, Any]: ...  # checkpointed with the run; {} when stateless

    def load_state(self, state: dict[str, Any]) -> None: ...


@runtime_checkable
class Reports(Protocol):
    """An agent or router that asks a model and says what each call did: `on_report` is handed one
    report per call (agents.llm_agent.AgentReport), whatever the outcome; None: nobody listens. The
    policy (leka.policy) hands every model-backed part the same sink, the run's llm_reports.jsonl."""

    on_report: Callable[[Any], None] | None


@runtime_checkable
class Evaluator(Protocol):
    """What the loop needs of the evaluator (benchmark.judge.evaluator.Evaluator): a result and a profile;
    `noise_floor`: the baseline also timed against itself (the loop asks it of the root's evaluation,
    `is_root`); `timing_budget_s`: this evaluation's timing phase, None for the configured one (the loop
    gives the last evaluation what its budget has left); `decide_below`: the parent's speedup, under which
    the timing may stop once decided; `reuse_baseline`: the root's baseline samples, against which a slow
    task's candidates are timed alone (issue 44)."""

    def evaluate_full(self, task: Task, candidate: Candidate | None = None, *,
                      profile: bool = False, noise_floor: bool = False, is_root: bool = False,
                      timing_budget_s: float | None = None,
                      decide_below: float | None = None,
                      reuse_baseline: list[float] | None = None) -> tuple[EvalResult, dict[str, Any] | None]: ...


@runtime_checkable
class EvalFuture(Protocol):
    """One submitted evaluation job: `done()` without blocking, `result()` blocks until there is one."""

    def done(self) -> bool: ...

    def result(self) -> tuple[EvalResult, dict[str, Any] | None]: ...


@runtime_checkable
class Runner(Protocol):
    """Runs evaluation jobs (benchmark/judge/job.py's steps) somewhere: a local child, an RPC board
    (benchmark.judge.runner.create(kind) makes one; MetaSchedule's runner shape)."""

    def submit(self, job: dict[str, Any]) -> EvalFuture: ...
