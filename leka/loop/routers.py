"""The loop's `Router` (leka.core.protocols): the rule-based hardware-sensing router or the LLM router,
behind one interface, chosen by the policy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.hw_sensing import HardwareSensingAgent
from agents.llm_agent import LLMRouter
from leka.core.config import LekaConfig
from leka.core.protocols import AgentContext
from leka.core.types import LEVELS


@dataclass
class RuleRouter:
    """Reads the profile (or routes round robin / random / fixed); its draw counter is checkpointed."""

    agent: HardwareSensingAgent

    def route(self, candidate: Any, profile: dict | None, context: AgentContext) -> tuple[str, str]:
        r = self.agent.route(candidate, profile, context)
        return r.level, r.reason

    def state(self) -> dict[str, Any]:
        return self.agent.state()

    def load_state(self, state: dict[str, Any]) -> None:
        if state:
            self.agent.load_state(state)


@dataclass
class LLMRouting:
    """Asks the model; nothing to checkpoint."""

    router: LLMRouter

    def route(self, candidate: Any, profile: dict | None, context: AgentContext) -> tuple[str, str]:
        return self.router.route(candidate, context)

    def state(self) -> dict[str, Any]:
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        return None


def make_router(cfg: LekaConfig, provider=None, views=None,
                deadline: Callable[[], float | None] | None = None) -> RuleRouter | LLMRouting:
    if cfg.run.policy == "llm" and cfg.run.routing == "profile" and provider is not None:
        return LLMRouting(LLMRouter(provider, views=views or (lambda c, x: {}),
                                    levels=[lv for lv in LEVELS if lv in cfg.run.layers],
                                    max_repairs=cfg.llm.max_repairs, deadline=deadline or (lambda: None),
                                    context_tokens=cfg.llm.context_tokens, prompt_tokens=cfg.llm.prompt_tokens))
    return RuleRouter(HardwareSensingAgent(cfg.run.routing, cfg.run.layers, cfg.run.seed))
