"""Prompt rendering and the edit schema the agents hand to the model.

Templates live in the top-level `prompts/` folder, one per agent, rendered with StrictUndefined so a
missing view is an error at render time, never a silently empty prompt. The schema exists twice,
from the level table (`EDIT_KINDS`, leka.core.levels): as a JSON schema for the `propose_edits` tool, and as text in the
prompt (`{% include "_edit_schema.j2" %}`, `edit_kinds_for(backend)`: the kinds that backend takes, its
L2 languages named) for servers without tool calls. What a template says of a backend (its L2 languages,
its L2 contract, its compile options) comes from its record (`backend_record`, leka.backends) and what
it says of a level (its edit kinds, the router's evidence) from the level table (`level_specs`): no
template names a backend or a level's kinds itself.
"""

from __future__ import annotations

import inspect
import json
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from leka.backends import get_backend, l2_languages
from leka.core.levels import LEVEL_SPECS, LiveTable
from leka.ir import sched
from leka.tvm_adapter.l0_passes import L0_PASSES as L0_PASS_REGISTRY

# `prompts` is a package of the distribution with the templates as its data (pyproject.toml), so a wheel
# install finds them beside `leka`, as a checkout or an editable install does: never a path from this file
PROMPTS_DIR = Path(str(resources.files("prompts")))

# each level's template is its spec's (a name under prompts/, or an absolute path for a level defined
# outside the package); the one-shot agent and the router are no level
TEMPLATES = LiveTable(lambda: {**{lv: spec.template for lv, spec in LEVEL_SPECS.items()}, "oneshot": "oneshot.j2",
                               "flat": "flat.j2", "router": "hw_sensing.j2"})

L0_PASSES = tuple(L0_PASS_REGISTRY)  # the names the IR layer applies, in registry order
L2_LANGUAGES = l2_languages()


def _payload_text(text: str, backend: str | None = None) -> str:
    """A payload field's description with the names it refers to filled in: every backend's L2 languages,
    or `backend`'s own (and its compile-option sets) from its record."""
    langs = L2_LANGUAGES if backend is None else tuple(get_backend(backend).l2_languages)
    out = text.replace("{l0_passes}", ", ".join(L0_PASSES)).replace("{l2_languages}", ", ".join(langs))
    if "{option_sets}" in out:
        b = get_backend(backend) if backend is not None else None
        sets = " | ".join(json.dumps(o) for o in b.option_sets) if b is not None and b.option_sets else (
            ", ".join(sorted(b.compile_options)) if b is not None else "the backend's codegen attributes")
        out = out.replace("{option_sets}", sets)
    return out


def _edit_kinds(backend: str | None = None) -> dict[str, dict[str, tuple[str | None, dict[str, str], str]]]:
    """level -> kind -> (target, payload, description); with `backend`, only the kinds its record takes
    (`EditKind.needs`), its own names filled in."""
    b = get_backend(backend) if backend is not None else None
    return {lv: {kind: (ek.target, {f: _payload_text(d, backend) for f, d in ek.payload.items()}, ek.describe)
                 for kind, ek in spec.edit_kinds.items() if b is None or not ek.needs or getattr(b, ek.needs)}
            for lv, spec in LEVEL_SPECS.items()}


def edit_kinds_for(backend: str) -> dict[str, dict[str, tuple[str | None, dict[str, str], str]]]:
    """The edit kinds a prompt on `backend` offers (`_edit_schema.j2`)."""
    return _edit_kinds(backend)


# level -> kind -> (target meaning or None, payload fields, one-line description), from the level table
EDIT_KINDS = LiveTable(_edit_kinds)

ROUTE_TOOL_NAME = "route"
EDIT_TOOL_NAME = "propose_edits"


# the agents that are no level and may emit edits of any level: the one-shot writer and the flat arm's
ANY_LEVEL = ("oneshot", "flat")


def levels_of(level: str) -> list[str]:
    """Levels an agent may emit edits for: its own, or every level for the agents of ANY_LEVEL."""
    return list(EDIT_KINDS) if level in ANY_LEVEL else [level]


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


def _absolute_template(name: str) -> str | None:
    p = Path(name)
    return p.read_text() if p.is_absolute() and p.is_file() else None


@lru_cache(maxsize=4)
def environment(folder: str | None = None) -> jinja2.Environment:
    env = jinja2.Environment(
        # a level defined outside the package names its template by absolute path (LevelSpec.template)
        loader=jinja2.ChoiceLoader([jinja2.FileSystemLoader(folder or str(PROMPTS_DIR)),
                                    jinja2.FunctionLoader(_absolute_template)]),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # prompts are plain text, not HTML
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["clip"] = _clip
    env.globals.update(edit_kinds=EDIT_KINDS, l0_passes=L0_PASSES, l2_languages=L2_LANGUAGES,
                       levels_of=levels_of, trace_dsl=trace_dsl, edit_kinds_for=edit_kinds_for,
                       backend_record=get_backend, level_specs=LEVEL_SPECS)
    return env


def render(template: str, **variables: Any) -> str:
    """Render prompts/<template>; a missing variable raises jinja2.UndefinedError naming it."""
    return environment().get_template(template).render(**variables).strip() + "\n"
