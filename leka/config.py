"""Configuration: one pydantic model per component, YAML overlays, then `key=value` overrides.

`load_config(["base.yaml", "ablation.yaml"], ["evaluator.timeout_s=120", "run.budget_s=300"])`
merges left to right; the resolved config is written into every run folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from leka.types import UserError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EvaluatorConfig(_Section):
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2])
    timeout_s: float = 600.0  # wall clock of one evaluation child process
    memory_cap_gb: float = 8.0  # resident memory of the child; over it the child is killed
    input_cap_gb: float = 2.0  # inputs + params bigger than this are refused up front
    warmup: int = 1
    max_pairs: int = 15  # candidate/baseline timing pairs (A B A B ...)
    min_pairs: int = 3
    sample_s: float = 0.03  # target wall time of one timing sample; `number` adapts to reach it
    sample_repeats: int = 3  # a sample is the best of this many runs of `number` calls
    timing_budget_s: float = 4.0  # soft cap on the timing phase per evaluation
    max_spread: float = 0.10  # timing valid if IQR/median of the per-pair ratios is under this
    poison: bool = True  # run on poison inputs before each checked run, so stale buffers fail
    overlap_baseline_build: bool = True  # build the TVM baseline on a second thread during the candidate build


class BaselineConfig(_Section):
    kind: Literal["untuned", "tuned", "torch", "torch_compile", "ort"] = "untuned"  # torch_compile: GPUs
    trials: int = 64
    cache_dir: str = ".leka-cache"


class RunConfig(_Section):
    budget_s: float = 600.0
    max_evals: int | None = None
    max_llm_calls: int | None = None
    max_tokens: int | None = None
    seed: int = 0
    policy: Literal["rules", "llm"] = "rules"
    routing: str = "profile"  # profile | round_robin | random | fixed:L0|L1|L2
    layers: list[str] = Field(default_factory=lambda: ["L0", "L1", "L2"])
    out: str = "runs"
    variants_per_call: int = 3
    defer_followups: int = 2  # deferred acceptance: lower-level follow-ups before pruning
    explore: float = 0.3  # weight of the exploration term in node selection


class LLMConfig(_Section):
    model: str = ""  # openai:MODEL | anthropic:MODEL | compat:URL|MODEL | scripted:PATH | replay:PATH
    temperature: float = 0.2
    max_tokens: int = 4096
    timeout_s: float = 120.0
    max_retries: int = 4
    max_repairs: int = 2


class LekaConfig(_Section):
    backend: Literal["llvm", "cuda", "opencl"] = "llvm"
    evaluator: EvaluatorConfig = Field(default_factory=EvaluatorConfig)
    baseline: BaselineConfig = Field(default_factory=BaselineConfig)
    run: RunConfig = Field(default_factory=RunConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _set_dotted(d: dict[str, Any], key: str, value: Any) -> None:
    *path, last = key.split(".")
    for p in path:
        d = d.setdefault(p, {})
    d[last] = value


def load_config(files: list[str | Path] = (), overrides: list[str] = ()) -> LekaConfig:
    data: dict[str, Any] = {}
    for f in files:
        p = Path(f)
        if not p.is_file():
            raise UserError(f"config file {f} not found")
        loaded = yaml.safe_load(p.read_text()) or {}
        if not isinstance(loaded, dict):
            raise UserError(f"config file {f}: expected a mapping at the top level")
        data = _merge(data, loaded)
    for o in overrides:
        if "=" not in o:
            raise UserError(f"override {o!r}: expected key=value")
        k, v = o.split("=", 1)
        _set_dotted(data, k.strip(), yaml.safe_load(v))
    try:
        return LekaConfig.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise UserError(f"config: {where}: {first['msg']}") from e


def dump_config(cfg: LekaConfig, path: str | Path) -> None:
    Path(path).write_text(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False))
