"""Records shared by every part of the loop: evaluation results, edits, typed control-flow errors.

Failures are data (`EvalResult.error_kind`); only a few typed exceptions steer control flow.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from leka.core.failures import FailureClass, classify
from leka.core.levels import LEVEL_SPECS

# a level's name: one of the level table's (leka.core.levels), which can grow at run time
Level = str

# What a kernel's dominant op is (leka.ir.classify), as profiles and views report it.
KernelKind = Literal["matmul", "conv", "depthwise_conv", "reduction", "injective", "layout"]
KERNEL_KINDS: tuple[KernelKind, ...] = ("matmul", "conv", "depthwise_conv", "reduction", "injective", "layout")
COMPUTE_KINDS = ("matmul", "conv", "depthwise_conv")  # kinds whose inner loop should be packed FMAs

# Why a candidate was rejected. Kept as a closed set so metrics and tests can count them.
ErrorKind = Literal[
    "bad_input",  # the task or candidate file itself is unusable (no Model, unparsable text, ...)
    "import",  # torch.export or the Relax importer failed (an op TVM cannot import)
    "compile",  # TVM lowering / codegen / the system compiler failed
    "runtime",  # the module raised while running
    "shape",  # output count, shape or dtype differs from the reference
    "mismatch",  # values outside tolerance
    "nan",  # NaN / Inf where the reference has none
    "input_mutated",  # the candidate wrote into one of its inputs
    "baseline_unsupported",  # the baseline engine cannot take the task (its reason: benchmark/engines.py)
    "timeout",  # the child process ran past its wall-clock limit
    "oom",  # the child process went over its memory cap
    "crash",  # the child process died (segfault, abort) without a result
    "timing_invalid",  # correct, but the paired timings were too noisy to trust
    "illegal_source",  # an L2 source keeps state, starts threads, changes process settings or reads files
    "stale_output",  # a timed call's output does not match its inputs' reference (replayed / unfinished)
    "process_state",  # the candidate changed process-wide settings (affinity, threads, FP mode, env)
    "gpu_fault",  # a CUDA fault (illegal address, launch failure): the child and its context are discarded
    # correct, but timed under the task's speed-of-light time x evaluator.floor_slack: no honest program
    # is that fast on this machine, so the time is not a speedup (benchmark/judge/floor.py)
    "below_physical_floor",
]


class EvalResult(BaseModel):
    """Everything the evaluator learned about one candidate. JSON-serialisable, never raised."""

    model_config = ConfigDict(extra="allow")

    task: str
    backend: str = "llvm"
    baseline: str | None = None
    compiled: bool = False
    correct: bool = False
    error_kind: ErrorKind | None = None
    error: str | None = None
    # what went wrong in a failed candidate (leka.core.failures: memory, syntax_api, numerics, parallelism,
    # timeout, other), decided from error_kind and the error's text; None while correct. The evaluator
    # sets it on every result it returns (`classified`)
    failure_class: FailureClass | None = None
    # correctness
    seeds: list[int] = Field(default_factory=list)
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    # timing: speedup = geometric mean over interleaved pairs of t_baseline / t_candidate, with its
    # confidence interval [speedup_lo, speedup_hi] (benchmark/judge/stats.py; None with fewer than 2 pairs)
    speedup: float | None = None
    speedup_lo: float | None = None
    speedup_hi: float | None = None
    t_candidate_s: float | None = None
    t_baseline_s: float | None = None
    timing_valid: bool | None = None  # the interval is narrower than evaluator.max_ci_width
    timing_spread: float | None = None  # IQR / median of the per-pair ratios: reported, not a gate
    n_pairs: int = 0
    # memory
    peak_memory_bytes: int | None = None
    planned_memory_bytes: int | None = None
    peak_rss_bytes: int | None = None
    peak_device_bytes: int | None = None  # GPU memory in use by the candidate's run (device backends)
    # cost of the evaluation itself, by phase
    build_s: float | None = None
    check_s: float | None = None
    timing_s: float | None = None
    wall_s: float | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def measured(self) -> bool:
        return self.correct and self.speedup is not None and bool(self.timing_valid)

    @property
    def loaded(self) -> bool:
        """Other processes used the machine during this evaluation's timing (extra["machine_load"])."""
        return bool((self.extra.get("machine_load") or {}).get("loaded"))

    def classified(self) -> EvalResult:
        """This result with its `failure_class` set from its error (in place; returned for chaining)."""
        self.failure_class = classify(self.error_kind, self.error, self.correct)
        return self

    def is_faster(self, p: float = 1.0) -> bool:
        """Faster than p x the baseline: measured, and the interval's lower bound is above p (a point
        speedup above p whose interval reaches below it is not evidence; one pair has no bound)."""
        return self.measured and self.speedup_lo is not None and self.speedup_lo > p


def is_faster(res: EvalResult, p: float = 1.0) -> bool:
    return res.is_faster(p)


class Edit(BaseModel):
    """One proposed change at one level. Frozen so it can be replayed and hashed."""

    model_config = ConfigDict(frozen=True)

    level: Level
    kind: str  # e.g. "pass", "relax_text", "trace", "tir_text", "source"
    target: str | None = None  # PrimFunc name / kernel name; None for whole-module L0 edits
    payload: dict[str, Any] = Field(default_factory=dict)
    rationale: str = ""

    @field_validator("level")
    @classmethod
    def _a_level_of_the_table(cls, v: str) -> str:
        if v not in LEVEL_SPECS:
            raise ValueError(f"level must be one of {', '.join(LEVEL_SPECS)}, got {v!r}")
        return v


def edit_digest(edit: Edit) -> str:
    """Stable content hash of an edit (level, kind, target, payload; not the rationale): what
    `context.tried` holds, and the edit half of `leka.ir.edits.apply_edit`'s memo key."""
    body = json.dumps({"level": edit.level, "kind": edit.kind, "target": edit.target,
                       "payload": edit.payload}, sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:20]


class LekaError(Exception):
    """Base for the few exceptions that steer control flow."""


class BudgetExhausted(LekaError):
    """A run's budget (wall clock, evaluations, LLM calls or tokens) is spent."""

    def __init__(self, what: str, used: float, limit: float, message: str | None = None):
        super().__init__(message or f"budget exhausted: {what} used {used:g} of {limit:g}")
        self.what, self.used, self.limit = what, used, limit


class UserError(LekaError):
    """Bad input from the user: the CLI prints the message on one line and exits non-zero."""
