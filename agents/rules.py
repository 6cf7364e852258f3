"""The offline rule-based policy: one deterministic agent per level (no LLM needed)."""

from __future__ import annotations

from agents.l0_relax import RuleL0Agent
from agents.l1_opencl import OpenCLRuleL1Agent
from agents.l1_tir import RuleL1Agent
from agents.l2_cuda import RuleCudaL2Agent
from agents.l2_opencl import OpenCLRuleL2Agent
from agents.l2_source import RuleL2Agent
from leka.core.levels import LEVEL_SPECS
from leka.core.protocols import Agent

# one rule agent per level of the level table (leka.core.levels)
RULE_AGENTS: dict[str, type] = {"L0": RuleL0Agent, "L1": RuleL1Agent, "L2": RuleL2Agent}
# a backend's own rules where they differ (OpenCL: work-group / vector-width traces, OpenCL C edits;
# CUDA: edits of the generated CUDA C)
BACKEND_RULE_AGENTS: dict[str, dict[str, type]] = {"opencl": {"L1": OpenCLRuleL1Agent, "L2": OpenCLRuleL2Agent},
                                                   "cuda": {"L2": RuleCudaL2Agent}}


def make_rule_agents(backend: str = "llvm", root_params=None) -> dict[str, Agent]:
    """{"L0": ..., "L1": ..., "L2": ...}. `root_params` (the task's lifted constants) saves the
    agents re-importing the task when the candidate is the root."""
    agents = {**RULE_AGENTS, **BACKEND_RULE_AGENTS.get(backend, {})}
    return {lv: agents[lv](backend, root_params=root_params) for lv in LEVEL_SPECS}
