"""The offline rule-based policy: one deterministic agent per level (no LLM needed)."""

from __future__ import annotations

from leka.backends import get_backend
from leka.core.levels import LEVEL_SPECS, LiveTable, behaviour, resolve
from leka.core.protocols import Agent

# one rule agent per level: each level's spec names its own (LevelSpec.rule_agent)
RULE_AGENTS: LiveTable = LiveTable(lambda: {lv: behaviour(s, "rule_agent") for lv, s in LEVEL_SPECS.items()})


def rule_agent_classes(backend: str) -> dict[str, type]:
    """Level -> rule agent class: the level's own, or the backend's where its record names one (a
    `"module:Class"`: the record sits below this layer)
    (OpenCL: work-group / vector-width traces, OpenCL C edits; CUDA: edits of the generated CUDA C)."""
    own = {lv: resolve(ref) for lv, ref in get_backend(backend).rule_agents.items()}
    return {**RULE_AGENTS, **own}


def make_rule_agents(backend: str = "llvm", root_params=None) -> dict[str, Agent]:
    """{level: agent} for every level of the table. `root_params` (the task's lifted constants) saves the
    agents re-importing the task when the candidate is the root."""
    agents = rule_agent_classes(backend)
    return {lv: agents[lv](backend, root_params=root_params) for lv in LEVEL_SPECS}
