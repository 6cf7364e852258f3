"""What an arm is given and what it gives back (leka.exp.arms, leka.exp.ms_arm, leka.exp.judge)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leka.exp.config import ExpConfig


@dataclass
class ArmContext:
    cfg: ExpConfig
    sets: list[str]  # the arm's LEKA overrides
    out: Path  # folder that will hold this attempt's run folder
    quiet: bool = True


@dataclass
class ArmOutcome:
    run_dir: Path
    candidate: Any = None  # leka.ir.Candidate or None (nothing correct / nothing produced)
    best_node: int | None = None
    evaluations: int = 0
    budget_used_s: float = 0.0
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    # dollars as the provider's price says: the ledger's list prices (leka.llm.base.PRICES) or the
    # Claude Code CLI's own total; None when a model was called and nobody priced it (compat, local
    # models, a CLI that never said); 0.0 when no model was called
    cost_usd: float | None = 0.0
    nodes_by_level: dict[str, int] = field(default_factory=dict)
    anytime: list[tuple[float, float]] = field(default_factory=list)  # (seconds, best speedup vs run baseline)
    run_baseline: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
