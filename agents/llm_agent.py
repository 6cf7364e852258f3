"""LLM-backed agents: one per level (and a one-shot writer), plus the hardware-sensing router.

An agent renders its prompt (prompts/<level template>), asks the provider for a `propose_edits`
tool call, parses the reply into `Edit`s, and runs the caller's `check` on each. Parse and legality
errors go back to the model as a repair message, at most `max_repairs` times. The outcome is data:
the legal edits (possibly none), `last_error` saying why some or all were dropped, and `last_report`
(calls, repairs, errors, tokens) for the tree node. Only `BudgetExhausted` escapes, because it
steers the run; every other failure (provider down after retries, a bad view, a crashing check)
becomes an empty proposal with a reason.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from leka.core.protocols import AgentContext
from leka.core.types import LEVELS, BudgetExhausted, Edit
from leka.llm.base import Completion, Message, Provider, ProviderError, Usage
from leka.llm.parsing import ParseError, parse_edits, parse_route, reply_data
from leka.llm.prompting import EDIT_TOOL_NAME, ROUTE_TOOL_NAME, TEMPLATES, edit_tool, render, route_tool

log = logging.getLogger("leka.agents")

ROLES = {
    "L0": "the L0 agent (graph-level edits to the Relax module)",
    "L1": "the L1 agent (loop schedules for TIR PrimFuncs)",
    "L2": "the L2 agent (target source for single kernels)",
    "oneshot": "a one-shot optimiser (writes the whole candidate at once)",
    "router": "the hardware-sensing agent",
}

ViewsFn = Callable[[Any, AgentContext], dict[str, str]]


class AgentReport(BaseModel):
    """What one propose/route call did; small enough to store with the tree node."""

    agent: str
    provider: str
    calls: int = 0
    repairs: int = 0
    accepted: int = 0
    errors: list[list[str]] = Field(default_factory=list)  # per reply, what was wrong with it
    failure: str | None = None  # why nothing (or not everything) came back
    usage: Usage = Field(default_factory=Usage)


def _echo(comp: Completion) -> str:
    """The model's reply as it goes back into the conversation before a repair message."""
    if comp.tool_args is not None:
        return json.dumps(comp.tool_args)[:20_000]
    return comp.text[:20_000] or "(empty reply)"


class _RepairLoop:
    """The call -> parse -> check -> repair loop both agents share."""

    level: str
    provider: Provider
    max_repairs: int
    views: ViewsFn
    deadline: Callable[[], float | None]
    max_tokens: int
    temperature: float
    last_error: str | None
    last_report: AgentReport | None

    def _vars(self, candidate: Any, context: AgentContext, tool_name: str) -> dict[str, Any]:
        views = dict(self.views(candidate, context))
        return {
            "level": self.level, "role": ROLES.get(self.level, self.level), "backend": context.backend,
            "task_id": context.task_id, "views": views, "task_contract": views.get("task_contract", ""),
            "profile_text": context.profile_text, "lineage_text": context.lineage_text,
            "route_reason": context.route_reason, "variants": context.variants,
            "vector_lanes": context.vector_lanes, "num_cores": context.num_cores, "tool_name": tool_name,
            "proposes": self.level != "router",
        }

    def _run(self, candidate: Any, context: AgentContext, *, template: str, tool: dict[str, Any],
             extra_vars: dict[str, Any], accept: Callable[[Completion], tuple[Any, list[str]]]) -> Any:
        """Returns accept()'s value for the first reply it calls good, or None; fills last_report."""
        report = AgentReport(agent=self.level, provider=self.provider.name)
        self.last_report, self.last_error = report, None
        try:
            v = {**self._vars(candidate, context, tool["name"]), **extra_vars}
            messages = [Message(role="system", content=render("system.j2", **v)),
                        Message(role="user", content=render(template, **v))]
        except Exception as e:  # noqa: BLE001 - a bad view or template is this node's failure, not the run's
            log.exception("%s agent: prompt could not be built", self.level)
            report.failure = self.last_error = f"prompt: {type(e).__name__}: {e}"
            return None
        ledger = getattr(self.provider, "ledger", None)
        for attempt in range(self.max_repairs + 1):
            try:
                if ledger is not None:
                    with ledger.tagged(self.level):
                        comp = self._complete(messages, tool)
                else:
                    comp = self._complete(messages, tool)
            except BudgetExhausted:
                report.failure = self.last_error = "budget exhausted"
                raise
            except ProviderError as e:
                report.failure = self.last_error = f"provider: {e}"
                return None
            except Exception as e:  # noqa: BLE001 - an unexpected provider bug must not kill the run
                log.exception("%s agent: provider raised", self.level)
                report.failure = self.last_error = f"provider: {type(e).__name__}: {e}"
                return None
            report.calls += 1
            report.usage = report.usage + comp.usage
            value, errors = accept(comp)
            report.errors.append(errors)
            if value is not None:
                report.failure = self.last_error = ("dropped: " + "; ".join(errors)) if errors else None
                return value
            if attempt == self.max_repairs:
                break
            report.repairs += 1
            messages = messages + [
                Message(role="assistant", content=_echo(comp)),
                Message(role="user", content=render("repair.j2", errors=errors, attempt=attempt + 1,
                                                    max_repairs=self.max_repairs, tool_name=tool["name"],
                                                    kind="edits" if tool["name"] == EDIT_TOOL_NAME else "route")),
            ]
        last = report.errors[-1] if report.errors else []
        report.failure = self.last_error = (
            f"no usable reply after {report.repairs} repair(s): " + "; ".join(last))[:2000]
        return None

    def _complete(self, messages: list[Message], tool: dict[str, Any]) -> Completion:
        return self.provider.complete(messages, tool=tool, max_tokens=self.max_tokens,
                                      temperature=self.temperature, deadline=self.deadline())


class LLMAgent(_RepairLoop):
    """Satisfies leka.protocols.Agent. `level` is "L0", "L1", "L2" or "oneshot" (edits of any level).

    views(candidate, context) -> the text views the template needs ("relax", "tir", "source",
    "reference", "task_contract", ...), already bounded by the caller. check(edit) -> None when the
    edit is legal, else a message the model can act on.
    """

    def __init__(self, level: str, provider: Provider, *, views: ViewsFn, check: Callable[[Edit], str | None],
                 max_repairs: int = 2, template: str | None = None,
                 deadline: Callable[[], float | None] = lambda: None, max_tokens: int = 4096,
                 temperature: float = 0.2):
        if level not in (*LEVELS, "oneshot"):
            raise ValueError(f"LLMAgent level must be L0, L1, L2 or oneshot, got {level!r}")
        self.level, self.provider, self.views, self.check = level, provider, views, check
        self.max_repairs, self.deadline = max_repairs, deadline
        self.template = template or TEMPLATES[level]
        self.max_tokens, self.temperature = max_tokens, temperature
        self.tool = edit_tool(level)
        self.last_error: str | None = None
        self.last_report: AgentReport | None = None

    def __repr__(self) -> str:
        return f"LLMAgent(level={self.level!r}, provider={self.provider.name!r})"

    def _accept(self, comp: Completion) -> tuple[list[Edit] | None, list[str]]:
        try:
            edits, errors = parse_edits(reply_data(comp), self.level)
        except ParseError as e:
            return None, [str(e)]
        legal: list[Edit] = []
        for n, e in enumerate(edits):
            label = f"{e.kind} edit {n + 1}" + (f" on {e.target}" if e.target else "")
            try:
                msg = self.check(e)
            except Exception as ex:  # noqa: BLE001 - a check that crashes rejects the edit, with the reason
                msg = f"checking it raised {type(ex).__name__}: {ex}"
            if msg is None:
                legal.append(e)
            else:
                errors.append(f"{label}: {msg}")
        return (legal or None), errors

    def propose(self, candidate: Any, context: AgentContext) -> list[Edit]:
        edits = self._run(candidate, context, template=self.template, tool=self.tool, extra_vars={},
                          accept=self._accept)
        if self.last_report is not None and edits:
            self.last_report.accepted = len(edits)
        return edits or []


class LLMRouter(_RepairLoop):
    """The hardware-sensing agent: route(candidate, context) -> (level, reason).

    When no usable answer comes (provider down, never a valid level), it returns
    (`fallback`, "fallback: <why>") instead of raising, so the run keeps going."""

    def __init__(self, provider: Provider, *, views: ViewsFn = lambda c, ctx: {},
                 levels: list[str] | tuple[str, ...] = LEVELS, max_repairs: int = 2, template: str | None = None,
                 deadline: Callable[[], float | None] = lambda: None, fallback: str | None = None,
                 max_tokens: int = 1024, temperature: float = 0.2):
        self.level = "router"
        self.provider, self.views, self.levels = provider, views, list(levels)
        if not self.levels or any(lv not in LEVELS for lv in self.levels):
            raise ValueError(f"router levels must be a non-empty subset of {LEVELS}, got {levels!r}")
        self.fallback = fallback or ("L1" if "L1" in self.levels else self.levels[0])
        self.max_repairs, self.deadline = max_repairs, deadline
        self.template = template or TEMPLATES["router"]
        self.max_tokens, self.temperature = max_tokens, temperature
        self.tool = route_tool(self.levels)
        self.last_error: str | None = None
        self.last_report: AgentReport | None = None

    def __repr__(self) -> str:
        return f"LLMRouter(levels={self.levels}, provider={self.provider.name!r})"

    def _accept(self, comp: Completion) -> tuple[tuple[str, str] | None, list[str]]:
        try:
            return parse_route(reply_data(comp), self.levels), []
        except ParseError as e:
            return None, [str(e)]

    def route(self, candidate: Any, context: AgentContext) -> tuple[str, str]:
        got = self._run(candidate, context, template=self.template, tool=self.tool,
                        extra_vars={"levels": self.levels}, accept=self._accept)
        if got is None:
            return self.fallback, f"fallback: {self.last_error}"
        return got


__all__ = ["AgentReport", "LLMAgent", "LLMRouter", "EDIT_TOOL_NAME", "ROUTE_TOOL_NAME"]
