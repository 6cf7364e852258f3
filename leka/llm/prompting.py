"""Prompt rendering and the edit schema the agents hand to the model.

Templates live in the top-level `prompts/` folder, one per agent, rendered with StrictUndefined so a
missing view is an error at render time, never a silently empty prompt. The schema exists twice,
from one table (`EDIT_KINDS`): as a JSON schema for the `propose_edits` tool, and as text in the
prompt (`{% include "_edit_schema.j2" %}`) for servers without tool calls.
"""

from __future__ import annotations

import inspect
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from leka.backends import l2_languages
from leka.core.levels import LEVEL_SPECS
from leka.ir import sched
from leka.tvm_adapter.l0_passes import L0_PASSES as L0_PASS_REGISTRY

# `prompts` is a package of the distribution with the templates as its data (pyproject.toml), so a wheel
# install finds them beside `leka`, as a checkout or an editable install does: never a path from this file
PROMPTS_DIR = Path(str(resources.files("prompts")))

TEMPLATES = {**{lv: spec.template for lv, spec in LEVEL_SPECS.items()}, "oneshot": "oneshot.j2",
             "router": "hw_sensing.j2"}

L0_PASSES = tuple(L0_PASS_REGISTRY)  # the names the IR layer applies, in registry order
L2_LANGUAGES = l2_languages()

# level -> kind -> (target meaning or None, payload fields, one-line description)
EDIT_KINDS: dict[str, dict[str, tuple[str | None, dict[str, str], str]]] = {
    "L0": {
        "pass": (None, {"name": "one of " + ", ".join(L0_PASSES)}, "apply one graph-level pass"),
        "relax_text": (None, {"text": "the whole new Relax TVMScript (lifted params: keep the trailing "
                                      "constant parameters c0, c1, ... and their order)"},
                       "replace the whole Relax module"),
    },
    "L1": {
        "trace": ("PrimFunc name", {"trace": "list of schedule steps in the trace DSL"},
                  "schedule one PrimFunc"),
        "tir_text": ("PrimFunc name", {"text": "replacement TIR TVMScript for that PrimFunc (same signature)"},
                     "replace one PrimFunc's TIR"),
        "traces": (None, {"traces": "object: PrimFunc name -> its list of schedule steps"},
                   "schedule several PrimFuncs in one edit (a graph of many unscheduled kernels)"),
    },
    "L2": {
        "source": ("kernel (PrimFunc) name", {
            "language": "one of " + ", ".join(L2_LANGUAGES), "text": "the source",
            "entry": "exported symbol, or null"}, "override one kernel's target source"),
        "compile_options": (None, {"options": "LLVM codegen attributes for the whole module, e.g. "
                                              '{"fast-math-contract": true, "fast-math-reassoc": true}'},
                            "change the CPU code generator's options (llvm backend only)"),
    },
}

ROUTE_TOOL_NAME = "route"
EDIT_TOOL_NAME = "propose_edits"


def levels_of(level: str) -> list[str]:
    """Levels an agent may emit edits for: its own, or all three for the one-shot agent."""
    return list(EDIT_KINDS) if level == "oneshot" else [level]


def edit_tool(level: str) -> dict[str, Any]:
    """The `propose_edits` tool: {"name", "description", "parameters": JSON schema}."""
    levels = levels_of(level)
    kinds = sorted({k for lv in levels for k in EDIT_KINDS[lv]})
    item = {
        "type": "object",
        "properties": {
            "level": {"type": "string", "enum": levels},
            "kind": {"type": "string", "enum": kinds,
                     "description": "; ".join(f"{k} ({lv}): {d[2]}" for lv in levels for k, d in EDIT_KINDS[lv].items())},
            "target": {"type": ["string", "null"], "description": "PrimFunc / kernel name; null for L0 edits"},
            "payload": {"type": "object", "description": " | ".join(
                f"{k}: {{{', '.join(d[1])}}}" for lv in levels for k, d in EDIT_KINDS[lv].items())},
            "rationale": {"type": "string", "description": "one sentence: why this should be faster"},
        },
        "required": ["level", "kind", "payload", "rationale"],
    }
    return {"name": EDIT_TOOL_NAME,
            "description": f"Propose {'/'.join(levels)} edits to the candidate; they are built, checked and timed.",
            "parameters": {"type": "object", "properties": {"edits": {"type": "array", "items": item}},
                           "required": ["edits"]}}


def route_tool(levels: list[str]) -> dict[str, Any]:
    return {"name": ROUTE_TOOL_NAME, "description": "Pick the level whose agent should act next, and say why.",
            "parameters": {"type": "object", "properties": {
                "level": {"type": "string", "enum": levels},
                "reason": {"type": "string", "description": "the bottleneck seen in the profile, in one sentence"}},
                "required": ["level", "reason"]}}


def trace_dsl() -> dict[str, Any]:
    """The L1 trace DSL's docstring and primitive list (leka.ir.sched): one source of truth."""
    return {"doc": inspect.cleandoc(sched.__doc__ or ""), "primitives": sorted(sched.PRIMITIVES)}


def _clip(text: Any, limit: int = 60_000) -> str:
    """Last guard on a view's size (callers pass bounded views): keep head and tail, mark the cut."""
    s = str(text)
    if len(s) <= limit:
        return s
    head = limit * 2 // 3
    tail = limit - head
    return f"{s[:head]}\n... [{len(s) - limit} characters cut] ...\n{s[-tail:]}"


@lru_cache(maxsize=4)
def environment(folder: str | None = None) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder or str(PROMPTS_DIR)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # prompts are plain text, not HTML
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["clip"] = _clip
    env.globals.update(edit_kinds=EDIT_KINDS, l0_passes=L0_PASSES, l2_languages=L2_LANGUAGES,
                       levels_of=levels_of, trace_dsl=trace_dsl)
    return env


def render(template: str, **variables: Any) -> str:
    """Render prompts/<template>; a missing variable raises jinja2.UndefinedError naming it."""
    return environment().get_template(template).render(**variables).strip() + "\n"
