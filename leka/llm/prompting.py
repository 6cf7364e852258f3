"""Prompt rendering and the edit schema the agents hand to the model.

Templates live in the repo's `prompts/` folder, one per agent, rendered with StrictUndefined so a
missing view is an error at render time, never a silently empty prompt. The schema exists twice,
from one table (`EDIT_KINDS`): as a JSON schema for the `propose_edits` tool, and as text in the
prompt (`{% include "_edit_schema.j2" %}`) for servers without tool calls.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from leka.backends import l2_languages

PROMPTS_DIR = Path(__file__).resolve().parents[2] / "prompts"

TEMPLATES = {"L0": "l0_relax.j2", "L1": "l1_tir.j2", "L2": "l2_source.j2", "oneshot": "oneshot.j2",
             "router": "hw_sensing.j2"}

_BASE_L0_PASSES = ("fold_batchnorm", "convert_layout_nhwc", "conv1x1_to_matmul", "clip_to_relu_min", "fuse",
                   "decompose_ops", "fold_constant", "dead_code_elimination")


def _l0_pass_names() -> tuple[str, ...]:
    """The pass names the IR layer implements (keys of tvm_adapter.L0_PASS_FNS), read with `ast` so
    the prompt lists exactly what can be applied, without importing TVM to render a prompt."""
    try:
        tree = ast.parse((Path(__file__).resolve().parents[1] / "tvm_adapter" / "__init__.py").read_text())
    except (OSError, SyntaxError):
        return _BASE_L0_PASSES
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "L0_PASS_FNS" for t in node.targets)
                and isinstance(node.value, ast.Dict)):
            names = [k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            if names:
                return tuple(names)
    return _BASE_L0_PASSES


L0_PASSES = _l0_pass_names()
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


@lru_cache(maxsize=1)
def trace_dsl() -> dict[str, Any]:
    """The L1 trace DSL's docstring and primitive list, read from leka/sched.py's source with `ast`:
    one source of truth without importing TVM just to render a prompt."""
    src = Path(__file__).resolve().parents[1] / "sched.py"
    tree = ast.parse(src.read_text())
    doc = ast.get_docstring(tree) or ""
    prims: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "PRIMITIVES" for t in node.targets):
            call = node.value
            if isinstance(call, ast.Call) and call.args:
                prims = sorted(ast.literal_eval(call.args[0]))
    return {"doc": doc, "primitives": prims}


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
