"""The offline rule-based policy: one deterministic agent per level (no LLM needed)."""

from __future__ import annotations

from agents.l0_relax import RuleL0Agent
from agents.l1_tir import RuleL1Agent
from agents.l2_source import RuleL2Agent
from leka.protocols import Agent


def make_rule_agents(backend: str = "llvm", root_params=None) -> dict[str, Agent]:
    """{"L0": ..., "L1": ..., "L2": ...}. `root_params` (the task's lifted constants) saves the
    agents re-importing the task when the candidate is the root."""
    if backend == "opencl":  # work-group / vector-width traces, OpenCL C source edits
        from agents.l1_opencl import OpenCLRuleL1Agent
        from agents.l2_opencl import OpenCLRuleL2Agent

        return {"L0": RuleL0Agent(backend, root_params=root_params),
                "L1": OpenCLRuleL1Agent(backend, root_params=root_params),
                "L2": OpenCLRuleL2Agent(backend, root_params=root_params)}
    return {
        "L0": RuleL0Agent(backend, root_params=root_params),
        "L1": RuleL1Agent(backend, root_params=root_params),
        "L2": RuleL2Agent(backend, root_params=root_params),
    }
