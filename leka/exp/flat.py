"""The `flat` arm (the no-layering ablation): one agent that may edit any level, and no router.

Under `run.policy: llm` the agent is one LLM agent (`agents.llm_agent.LLMAgent` at level "flat",
prompts/flat.j2) that sees the whole candidate (Relax text, PrimFunc table, the hottest kernels' TIR
and sources, the profile) and proposes edits of any level; it is built from the same parts as LEKA's
level agents (leka.policy.llm_parts: the same model, ledger and budget, legality check, repair loop
and report sink), so the arms differ only in the layering. Under `run.policy: rules` (the
`flat_rule` preset) it reuses the rule agents: each call asks every level's agent for its proposals
and interleaves them (L0, L1, L2, L0, ...), so one slot of `variants_per_call` edits can mix levels.
The "router" only names the slot; it reads no profile and asks no model.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from leka.core.levels import level_names
from leka.core.protocols import AgentContext
from leka.core.types import Edit


class FlatAgent:
    level = "flat"

    @property
    def widens(self) -> bool:
        """Whether a widened round gives it more to propose: when one of the agents it asks does."""
        return any(getattr(self.agents.get(lv), "widens", False) for lv in self.layers)

    def __init__(self, agents: dict[str, Any], layers: list[str]):
        self.agents = agents
        self.layers = [lv for lv in level_names() if lv in layers]

    def propose(self, candidate, context: AgentContext) -> list[Edit]:
        per: list[list[Edit]] = []
        for lv in self.layers:
            ctx = dataclasses.replace(context, level=lv, route_reason="flat: no router, any level")
            per.append(list(self.agents[lv].propose(candidate, ctx) or []))
        out: list[Edit] = []
        for i in range(max((len(x) for x in per), default=0)):
            out += [x[i] for x in per if i < len(x)]
        return out


class FlatRouter:
    """Names the one slot the flat agent fills; no profile, no decision."""

    def __init__(self, layers: list[str]):
        self.layers = [lv for lv in level_names() if lv in layers]

    def route(self, candidate, profile, context: AgentContext) -> tuple[str, str]:
        return self.layers[0], "flat: one agent edits any level (no router)"

    def state(self) -> dict[str, Any]:
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        return None


def flat_agents(cfg, root, task, run_dir):
    """`leka.run.run(agents_factory=...)`: the same flat agent behind every level slot, so a node the
    graph marks exhausted for one slot falls through to the same agent with the next slot."""
    router = FlatRouter(cfg.run.layers)
    if cfg.run.policy == "llm":
        from agents.llm_agent import LLMAgent
        from leka.policy import flat_views, llm_parts

        m = llm_parts(cfg, root, task, run_dir)
        one = LLMAgent("flat", m.provider, views=flat_views(root, task), check=m.check, **m.agent_kwargs(cfg))
        return {lv: one for lv in level_names()}, router, m.ledger
    from agents.rules import make_rule_agents

    flat = FlatAgent(make_rule_agents(cfg.backend, root_params=root.params), cfg.run.layers)
    return {lv: flat for lv in level_names()}, router, None
