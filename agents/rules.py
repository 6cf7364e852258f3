"""The offline rule-based policy: one deterministic agent per level (no LLM needed)."""

from __future__ import annotations

import importlib

from agents.l0_relax import RuleL0Agent
from agents.l1_tir import RuleL1Agent
from agents.l2_source import RuleL2Agent
from leka.backends import get_backend
from leka.core.levels import LEVEL_SPECS
from leka.core.protocols import Agent

# one rule agent per level of the level table (leka.core.levels)
RULE_AGENTS: dict[str, type] = {"L0": RuleL0Agent, "L1": RuleL1Agent, "L2": RuleL2Agent}


def _resolve(ref: str) -> type:
    """`"module:Class"` of a backend record's `rule_agents` (the record sits below this layer, so it
    names the class instead of importing it)."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def rule_agent_classes(backend: str) -> dict[str, type]:
    """Level -> rule agent class: the default one, or the backend's own where its record names one
    (OpenCL: work-group / vector-width traces, OpenCL C edits; CUDA: edits of the generated CUDA C)."""
    own = {lv: _resolve(ref) for lv, ref in get_backend(backend).rule_agents.items()}
    return {**RULE_AGENTS, **own}


def make_rule_agents(backend: str = "llvm", root_params=None) -> dict[str, Agent]:
    """{"L0": ..., "L1": ..., "L2": ...}. `root_params` (the task's lifted constants) saves the
    agents re-importing the task when the candidate is the root."""
    agents = rule_agent_classes(backend)
    return {lv: agents[lv](backend, root_params=root_params) for lv in LEVEL_SPECS}
