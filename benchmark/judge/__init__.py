"""The judge: every candidate built, checked and timed in a process of its own (benchmark/judge/README.md).

This module is its public API, the only one the rest of the project imports (an import-linter contract in
pyproject.toml); the modules under it are the judge's own. Names load on first use, so that a light caller
(a report's interval, a CLI's help) does not import the evaluator, TVM and torch with them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> (the module that defines it, its name there)
_PUBLIC = {
    "Evaluator": ("evaluator", "Evaluator"),
    "run_job": ("job", "run_job"),
    "compare": ("outputs", "compare"),
    "flat_outputs": ("refs", "flat_outputs"),
    "degenerate": ("audit", "degenerate"),
    "platform_line": ("machine_state", "line"),
    "Hold": ("slots", "Hold"),
    "acquire_slot": ("slots", "acquire"),
    "cpu_gate": ("slots", "cpu_gate"),
    "cpu_sockets": ("slots", "cpu_sockets"),
    **{name: ("stats", name) for name in ("LEVEL", "RESAMPLES", "fmt_interval", "geomean", "geomean_interval",
                                          "mean_interval", "ratio_interval", "speedup_interval")},
}
__all__ = [  # the public API, each name in _PUBLIC
    "Evaluator",
    "Hold",
    "LEVEL",
    "RESAMPLES",
    "acquire_slot",
    "compare",
    "cpu_gate",
    "cpu_sockets",
    "degenerate",
    "flat_outputs",
    "fmt_interval",
    "geomean",
    "geomean_interval",
    "mean_interval",
    "platform_line",
    "ratio_interval",
    "run_job",
    "speedup_interval",
]

if TYPE_CHECKING:  # what a type checker sees of the names above
    from benchmark.judge.audit import degenerate
    from benchmark.judge.evaluator import Evaluator
    from benchmark.judge.job import run_job
    from benchmark.judge.machine_state import line as platform_line
    from benchmark.judge.outputs import compare
    from benchmark.judge.refs import flat_outputs
    from benchmark.judge.slots import Hold, cpu_gate, cpu_sockets
    from benchmark.judge.slots import acquire as acquire_slot
    from benchmark.judge.stats import (
        LEVEL,
        RESAMPLES,
        fmt_interval,
        geomean,
        geomean_interval,
        mean_interval,
        ratio_interval,
        speedup_interval,
    )


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _PUBLIC[name]
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value
    return value
