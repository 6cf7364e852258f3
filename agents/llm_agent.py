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

from leka.core.levels import LEVEL_SPECS, LiveTable, level_names
from leka.core.protocols import AgentContext
from leka.core.types import BudgetExhausted, Edit
from leka.llm.base import Completion, Message, Provider, ProviderError, Usage
from leka.llm.parsing import ParseError, parse_edits, parse_route, reply_data
from leka.llm.prompting import (
    ANY_LEVEL,
    EDIT_TOOL_NAME,
    ROUTE_TOOL_NAME,
    TEMPLATES,
    edit_tool,
    render,
    route_tool,
)
from leka.llm.small import (
    example_trace,
    fit_views,
    messages_tokens,
    small_edit_tool,
    tir_block_table,
    tir_blocks,
    trace_name_errors,
)

log = logging.getLogger("leka.agents")

# each level's role is its spec's (leka.core.levels); the two agents that are no level have theirs here
ROLES = LiveTable(lambda: {**{lv: s.role for lv, s in LEVEL_SPECS.items()},
                           "oneshot": "a one-shot optimiser (writes the whole candidate at once)",
                           "flat": "the one optimiser of every level (graph, loop schedules, kernel sources)",
                           "router": "the hardware-sensing agent"})

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
    cut: bool = False  # the views were cut to fit the model's context
    # per reply: {"parsed": a JSON value with >= 1 well-formed edit (or a valid route), "edits":
    # [[kind, legal], ...], "latency_s", "input_tokens", "output_tokens"} (experiments count these);
    # the router's also "route": [level, reason], the answer it gave
    replies: list[dict[str, Any]] = Field(default_factory=list)


def _echo(comp: Completion, limit: int = 20_000) -> str:
    """The model's reply as it goes back into the conversation before a repair message."""
    if comp.tool_args is not None:
        return json.dumps(comp.tool_args)[:limit]
    return comp.text[:limit] or "(empty reply)"


# Bounded prompts (context_tokens set) keep room for one repair turn: the echoed reply, cut to
# ECHO_CHARS, and the repair message.
ECHO_CHARS = 1500
REPAIR_RESERVE = 900
NO_SOURCE = "(not shown: the context is too small for a source override here; use compile options)"


class CallInfo(BaseModel):
    """What one call's prompt was built from, for the schema, the parser and the checks."""

    target: str | None = None  # the kernel whose TIR the prompt shows
    blocks: list[str] = Field(default_factory=list)
    cut: bool = False  # views were cut to fit the context
    source: bool = True  # an L2 source override was offered
    stat: dict[str, Any] = Field(default_factory=dict)  # what accept() made of the latest reply


class _RepairLoop:
    """The call -> parse -> check -> repair loop both agents share; both satisfy
    leka.core.protocols.Reports (`on_report` gets each call's AgentReport)."""

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

    context_tokens: int | None = None
    prompt_tokens: int | None = None
    small_schema: bool = False
    on_report: Callable[[AgentReport], None] | None = None

    def _small_vars(self, v: dict[str, Any], context: AgentContext, info: CallInfo) -> None:
        """Block table, an example trace legal for this kernel, and the kernel name (small schemas)."""
        views = v["views"]
        blocks = tir_blocks(views.get("tir", "")) if views.get("tir") else []
        info.blocks = sorted({b["name"] for b in blocks})
        info.target = views.get("kernel") or None
        if self.level in ANY_LEVEL and views.get("kernels"):
            # the view holds every PrimFunc's TIR in the listed order: show the first one's blocks
            first = views.get("tir", "").split("@T.prim_func")[1:2]
            blocks = tir_blocks(first[0]) if first else []
            info.target = views["kernels"].split()[0]
        example = example_trace(blocks)
        # few edits per reply: a CPU generates a few tokens per second
        v["max_edits"] = 3 if self.level == "oneshot" else min(2, v["variants"])
        v.update(small=True, blocks_table=tir_block_table(blocks), kernel=info.target or "", source_ok=False,
                 example=json.dumps({"edits": [{"level": "L1", "kind": "trace", "target": info.target or "KERNEL",
                                                "rationale": "inline the producers, parallel outer loop",
                                                "payload": {"trace": example}}]}) if example else "")

    def _prompt(self, v: dict[str, Any], template: str, tool: dict[str, Any],
                info: CallInfo) -> tuple[list[Message], dict[str, Any], int]:
        """(first messages, tool, reply room). With `context_tokens`, views are cut so the prompt,
        one repair turn and the reply fit (and the prompt within `prompt_tokens`, when set); an L2
        source override is offered only if its views fit."""
        def texts(views: dict[str, str]) -> list[str]:
            w = {**v, "views": views, "task_contract": views.get("task_contract", ""), "source_ok": info.source}
            return [render("system.j2", **w), render(template, **w)]

        views, max_tokens = v["views"], self.max_tokens
        if self.context_tokens is None and self.prompt_tokens is None:
            out = texts(views)
        else:
            ctx = self.context_tokens or 1 << 30
            max_tokens = min(self.max_tokens, ctx // 4)
            budget = min(ctx - max_tokens - REPAIR_RESERVE, self.prompt_tokens or 1 << 30)
            full_source = len(views.get("source", ""))
            views, out, info.cut = fit_views(texts, views, budget)
            if self.small_schema and self.level == "L2" and full_source and len(views["source"]) < full_source // 2:
                info.source = False
                views, out, info.cut = fit_views(texts, {**views, "source": NO_SOURCE, "tir": ""}, budget)
            room = ctx - messages_tokens(out) - REPAIR_RESERVE
            max_tokens = max(128, min(max_tokens, room))
        if self.small_schema and tool["name"] == EDIT_TOOL_NAME:
            one = self.level in ANY_LEVEL  # any PrimFunc of the module (one-shot: edits build on each other)
            kernels = v["views"].get("kernels", "").split() if one else [info.target] if info.target else []
            tool = small_edit_tool(self.level, kernels=kernels, blocks=info.blocks, backend=v["backend"],
                                   source=info.source and self.level == "L2",
                                   max_edits=v["max_edits"])
        return [Message(role="system", content=out[0]), Message(role="user", content=out[1])], tool, max_tokens

    def _repair_turn(self, messages: list[Message], base: int, comp: Completion, errors: list[str],
                     attempt: int, tool: dict[str, Any], seen: list[str]) -> list[Message]:
        bounded = self.context_tokens is not None or self.prompt_tokens is not None
        echo = _echo(comp, ECHO_CHARS if bounded else 20_000)
        if echo in seen:
            errors = [*errors, "this reply is identical to an earlier rejected one: change what the errors name"]
        seen.append(echo)
        turn = [Message(role="assistant", content=echo),
                Message(role="user", content=render("repair.j2", errors=errors, attempt=attempt + 1,
                                                    max_repairs=self.max_repairs, tool_name=tool["name"],
                                                    kind="edits" if tool["name"] == EDIT_TOOL_NAME else "route"))]
        # a bounded context keeps only the latest failed reply, so every repair fits like the first
        return (messages[:base] if bounded else messages) + turn

    def _temperature(self, attempt: int) -> float:
        """Each repair samples hotter: the same prompt at the same low temperature gave a small model's
        identical rejected reply back."""
        return min(1.0, self.temperature + 0.35 * attempt) if attempt else self.temperature

    def _run(self, candidate: Any, context: AgentContext, *, template: str, tool: dict[str, Any],
             extra_vars: dict[str, Any], accept: Callable[[Completion, CallInfo], tuple[Any, list[str]]]) -> Any:
        """Returns accept()'s value for the first reply it calls good, or None; fills last_report
        (and hands it to `on_report`, when set, whatever the outcome)."""
        report = AgentReport(agent=self.level, provider=self.provider.name)
        self.last_report, self.last_error = report, None
        try:
            return self._run_inner(candidate, context, report, template=template, tool=tool,
                                   extra_vars=extra_vars, accept=accept)
        finally:
            if self.on_report is not None:
                try:
                    self.on_report(report)
                except Exception:  # noqa: BLE001 - a report that cannot be written must not stop the run
                    log.exception("%s agent: on_report failed", self.level)

    def _run_inner(self, candidate: Any, context: AgentContext, report: AgentReport, *, template: str,
                   tool: dict[str, Any], extra_vars: dict[str, Any],
                   accept: Callable[[Completion, CallInfo], tuple[Any, list[str]]]) -> Any:
        info = CallInfo()
        deadline = context.deadline if context.deadline is not None else self.deadline()
        try:
            v = {**self._vars(candidate, context, tool["name"]), **extra_vars}
            if self.small_schema and tool["name"] == EDIT_TOOL_NAME:
                self._small_vars(v, context, info)
            messages, tool, max_tokens = self._prompt(v, template, tool, info)
        except Exception as e:  # noqa: BLE001 - a bad view or template is this node's failure, not the run's
            log.exception("%s agent: prompt could not be built", self.level)
            report.failure = self.last_error = f"prompt: {type(e).__name__}: {e}"
            return None
        report.cut = info.cut
        ledger = getattr(self.provider, "ledger", None)
        base, seen = len(messages), []
        for attempt in range(self.max_repairs + 1):
            try:
                if ledger is not None:
                    with ledger.tagged(self.level):
                        comp = self._complete(messages, tool, max_tokens, self._temperature(attempt), deadline)
                else:
                    comp = self._complete(messages, tool, max_tokens, self._temperature(attempt), deadline)
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
            info.stat = {"parsed": False, "edits": []}
            value, errors = accept(comp, info)
            report.errors.append(errors)
            report.replies.append({**info.stat, "latency_s": round(comp.latency_s, 3),
                                   "input_tokens": comp.usage.input_tokens, "output_tokens": comp.usage.output_tokens})
            if value is not None:
                report.failure = self.last_error = ("dropped: " + "; ".join(errors)) if errors else None
                report.accepted = len(value) if isinstance(value, list) else 1
                return value
            if attempt == self.max_repairs:
                break
            report.repairs += 1
            messages = self._repair_turn(messages, base, comp, errors, attempt, tool, seen)
        last = report.errors[-1] if report.errors else []
        report.failure = self.last_error = (
            f"no usable reply after {report.repairs} repair(s): " + "; ".join(last))[:2000]
        return None

    def _complete(self, messages: list[Message], tool: dict[str, Any], max_tokens: int,
                  temperature: float, deadline: float | None) -> Completion:
        return self.provider.complete(messages, tool=tool, max_tokens=max_tokens, temperature=temperature,
                                      deadline=deadline)


class LLMAgent(_RepairLoop):
    """Satisfies leka.protocols.Agent. `level` is "L0", "L1", "L2", or one of ANY_LEVEL (edits of any
    level): "oneshot" (the one-shot arm) or "flat" (the flat arm's one agent, leka.exp.flat).

    views(candidate, context) -> the text views the template needs ("relax", "tir", "source",
    "reference", "task_contract", ...), already bounded by the caller. check(candidate, edit) -> None
    when the edit is legal on the candidate being expanded, else a message the model can act on. The
    calls stop at `context.deadline` (the run's budget) or, without one, at `deadline()`.
    """

    def __init__(self, level: str, provider: Provider, *, views: ViewsFn, check: Callable[[Any, Edit], str | None],
                 max_repairs: int = 2, template: str | None = None,
                 deadline: Callable[[], float | None] = lambda: None, max_tokens: int = 4096,
                 temperature: float = 0.2, context_tokens: int | None = None, prompt_tokens: int | None = None,
                 small_schema: bool = False, on_report: Callable[[AgentReport], None] | None = None):
        if level not in (*level_names(), *ANY_LEVEL):
            raise ValueError(f"LLMAgent level must be one of {', '.join((*level_names(), *ANY_LEVEL))}, "
                             f"got {level!r}")
        self.level, self.provider, self.views, self.check = level, provider, views, check
        self.max_repairs, self.deadline = max_repairs, deadline
        self.template = template or TEMPLATES[level]
        self.max_tokens, self.temperature = max_tokens, temperature
        self.tool = edit_tool(level)
        self.context_tokens, self.prompt_tokens, self.small_schema = context_tokens, prompt_tokens, small_schema
        self.on_report = on_report
        self.last_error: str | None = None
        self.last_report: AgentReport | None = None

    def __repr__(self) -> str:
        return f"LLMAgent(level={self.level!r}, provider={self.provider.name!r})"

    def _accept(self, comp: Completion, info: CallInfo, candidate: Any) -> tuple[list[Edit] | None, list[str]]:
        try:
            edits, errors = parse_edits(reply_data(comp), self.level, default_target=info.target)
        except ParseError as e:
            return None, [str(e)]
        info.stat["parsed"] = bool(edits)
        legal: list[Edit] = []
        for n, e in enumerate(edits):
            label = f"{e.kind} edit {n + 1}" + (f" on {e.target}" if e.target else "")
            try:
                msg = trace_name_errors(e.payload.get("trace"), info.blocks) if e.kind == "trace" else None
                msg = msg or self.check(candidate, e)
            except Exception as ex:  # noqa: BLE001 - a check that crashes rejects the edit, with the reason
                msg = f"checking it raised {type(ex).__name__}: {ex}"
            info.stat["edits"].append([e.kind, msg is None])
            if msg is None:
                legal.append(e)
            else:
                errors.append(f"{label}: {msg}")
        return (legal or None), errors

    def propose(self, candidate: Any, context: AgentContext) -> list[Edit]:
        edits = self._run(candidate, context, template=self.template, tool=self.tool, extra_vars={},
                          accept=lambda comp, info: self._accept(comp, info, candidate))
        return edits or []


class LLMRouter(_RepairLoop):
    """The hardware-sensing agent, asking the model (leka.core.protocols.Router): route(candidate,
    profile, context) -> (level, reason); the profile reaches the model as `context.profile_text`.

    When no usable answer comes (provider down, never a valid level), it returns
    (`fallback`, "fallback: <why>") instead of raising, so the run keeps going."""

    def __init__(self, provider: Provider, *, views: ViewsFn = lambda c, ctx: {},
                 levels: list[str] | tuple[str, ...] | None = None, max_repairs: int = 2, template: str | None = None,
                 deadline: Callable[[], float | None] = lambda: None, fallback: str | None = None,
                 max_tokens: int = 1024, temperature: float = 0.2, context_tokens: int | None = None,
                 prompt_tokens: int | None = None, on_report: Callable[[AgentReport], None] | None = None):
        self.level = "router"
        self.provider, self.views, self.levels = provider, views, list(level_names() if levels is None else levels)
        if not self.levels or any(lv not in level_names() for lv in self.levels):
            raise ValueError(f"router levels must be a non-empty subset of {level_names()}, got {levels!r}")
        self.fallback = fallback or ("L1" if "L1" in self.levels else self.levels[0])
        self.max_repairs, self.deadline = max_repairs, deadline
        self.template = template or TEMPLATES["router"]
        self.max_tokens, self.temperature = max_tokens, temperature
        self.tool = route_tool(self.levels)
        self.context_tokens, self.prompt_tokens = context_tokens, prompt_tokens
        self.on_report = on_report
        self.last_error: str | None = None
        self.last_report: AgentReport | None = None

    def __repr__(self) -> str:
        return f"LLMRouter(levels={self.levels}, provider={self.provider.name!r})"

    def _accept(self, comp: Completion, info: CallInfo) -> tuple[tuple[str, str] | None, list[str]]:
        try:
            got = parse_route(reply_data(comp), self.levels)
            info.stat["parsed"] = True
            info.stat["route"] = list(got)  # the reply itself (level, reason): llm_reports.jsonl keeps it
            return got, []
        except ParseError as e:
            return None, [str(e)]

    def route(self, candidate: Any, profile: dict[str, Any] | None, context: AgentContext) -> tuple[str, str]:
        got = self._run(candidate, context, template=self.template, tool=self.tool,
                        extra_vars={"levels": self.levels}, accept=self._accept)
        if got is None:
            return self.fallback, f"fallback: {self.last_error}"
        return got

    def state(self) -> dict[str, Any]:
        return {}  # each route is a fresh call: nothing to checkpoint

    def load_state(self, state: dict[str, Any]) -> None:
        return None


__all__ = ["AgentReport", "LLMAgent", "LLMRouter", "EDIT_TOOL_NAME", "ROUTE_TOOL_NAME"]
