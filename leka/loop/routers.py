"""The loop's `Router` (leka.core.protocols) for the policy: the rule-based hardware-sensing router
or the LLM router; both implement the protocol themselves."""

from __future__ import annotations

from agents.hw_sensing import HardwareSensingAgent
from agents.llm_agent import LLMRouter
from leka.core.config import LekaConfig
from leka.core.levels import level_names


def make_router(cfg: LekaConfig, provider=None, views=None, on_report=None) -> HardwareSensingAgent | LLMRouter:
    """The LLM router only for `policy: llm` with `routing: profile`; its calls stop at the
    AgentContext's deadline (the run's budget), and each one's report goes to `on_report` (the
    `Reports` protocol of leka.core.protocols), as the level agents' do. The rule router asks no model."""
    if cfg.run.policy == "llm" and cfg.run.routing == "profile" and provider is not None:
        return LLMRouter(provider, views=views or (lambda c, x: {}),
                         levels=[lv for lv in level_names() if lv in cfg.run.layers],
                         max_repairs=cfg.llm.max_repairs,
                         context_tokens=cfg.llm.context_tokens, prompt_tokens=cfg.llm.prompt_tokens,
                         on_report=on_report)
    return HardwareSensingAgent(cfg.run.routing, cfg.run.layers, cfg.run.seed, near_roof=cfg.router.near_roof)
