"""What a small model needs: prompts that fit its context, and edit schemas it can fill.

- `estimate_tokens` / `fit_views`: a prompt is rendered, its size estimated, and the largest views
  cut (middle elided) until prompt + reply fit the model's context (`llm.context_tokens`).
- `tir_blocks` / `tir_block_table`: the real block names and loop nests of the TIR the model sees,
  read from the text, so a schema can offer exactly those names and the prompt can show a trace
  example that is legal for this kernel (a 0.5B model copies examples; the docstring's "matmul"
  example got copied onto a GELU).
- `small_edit_tool(level, ...)`: per-level JSON schemas with enums of real names (L0: a pass;
  L1: a short trace whose `get_sblock` takes a real block name; L2: compile options, and a source
  override only when its views fit). A llama.cpp server turns the schema into a grammar
  (`llm.json_schema`), so the reply fits it by construction; the parser still checks everything.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from leka.backends import get_backend
from leka.core.levels import LEVEL_SPECS
from leka.core.text import elide
from leka.llm.prompting import EDIT_TOOL_NAME, L0_PASSES, levels_of

# Measured against Qwen2.5's tokenizer on these prompts (TVMScript, Python, prose): about 3.3
# characters per token; 3.0 keeps the estimate on the safe side.
CHARS_PER_TOKEN = 3.0
TEMPLATE_MARGIN = 64  # chat-template tokens per message, and rounding

# Views an agent can do without, cut first and hardest; then the main views.
SHRINK_ORDER = ("task_contract", "summary", "relax", "reference", "source", "tir")

def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def messages_tokens(texts: list[str]) -> int:
    return sum(estimate_tokens(t) + TEMPLATE_MARGIN for t in texts)


def _elide(text: str, max_chars: int) -> str:
    return elide(text, max_chars, margin=40)


def fit_views(render: Callable[[dict[str, str]], list[str]], views: dict[str, str], budget_tokens: int,
              *, rounds: int = 8) -> tuple[dict[str, str], list[str], bool]:
    """(views, rendered texts, whether anything was cut) such that the rendered prompt's estimate is
    within `budget_tokens`, cutting the views in SHRINK_ORDER. The result may still be over budget
    when the fixed text alone is (the caller then sends less reply room)."""
    views = dict(views)
    texts = render(views)
    cut = False
    for _ in range(rounds):
        over = messages_tokens(texts) - budget_tokens
        if over <= 0:
            break
        cut = True
        need = int(over * CHARS_PER_TOKEN) + 200
        shown = "\n".join(texts)
        for key in SHRINK_ORDER:
            if need <= 0:
                break
            text = views.get(key)
            if not text or len(text) < 200 or text[:120] not in shown:  # a view the template leaves out
                continue
            # an optional view goes entirely; a main one keeps at least a fifth of its text
            floor = 0 if key in ("task_contract", "summary") else len(text) // 5
            take = min(need, len(text) - floor)
            if take <= 0:
                continue
            views[key] = _elide(text, len(text) - take) if len(text) - take > 0 else ""
            need -= take
        texts = render(views)
    return views, texts, cut


# -- TIR structure, from the text the model sees ---------------------------------------------------

_FOR = re.compile(r"^(\s*)for (.+?) in (T\.grid|range|T\.serial|T\.parallel|T\.vectorized|T\.unroll)\((.*)\):\s*$")
_BLOCK = re.compile(r'^(\s*)with T\.sblock\("([^"]+)"\)')
_REMAP = re.compile(r'T\.axis\.remap\("([SR]+)"')
_INT = re.compile(r"T\.int(?:32|64)\((-?\d+)\)")
_DEF = re.compile(r"^def (\w+)\(", re.M)


def _split_args(s: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def tir_blocks(tir: str) -> list[dict[str, Any]]:
    """[{"name", "loops": [(var, extent)], "kinds": "SSR..."}] for each `T.sblock` in the text,
    with the loops that enclose it, outermost first (the root block is left out)."""
    stack: list[tuple[int, list[tuple[str, str]]]] = []  # (indent, loops of that `for`)
    blocks: list[dict[str, Any]] = []
    lines = tir.splitlines()
    for n, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        m = _FOR.match(line)
        if m:
            names = [v.strip() for v in m.group(2).split(",")]
            extents = [_INT.sub(r"\1", a) for a in _split_args(m.group(4))]
            if m.group(3) != "T.grid":
                extents = extents[-1:] if extents else ["?"]
            stack.append((indent, list(zip(names, extents + ["?"] * (len(names) - len(extents)), strict=False))))
            continue
        b = _BLOCK.match(line)
        if b and b.group(2) != "root":
            loops = [lp for _, ls in stack for lp in ls]
            kinds = ""
            for nxt in lines[n + 1:n + 3]:
                if r := _REMAP.search(nxt):
                    kinds = r.group(1)
                    break
            blocks.append({"name": b.group(2), "loops": loops, "kinds": kinds})
    return blocks


def tir_func_names(tir: str) -> list[str]:
    return [n for n in _DEF.findall(tir) if n != "main"]


def tir_block_table(blocks: list[dict[str, Any]], limit: int = 24) -> str:
    rows = []
    for b in blocks[:limit]:
        loops = ", ".join(v for v, _ in b["loops"]) or "-"
        ext = " x ".join(e for _, e in b["loops"]) or "-"
        red = f"; reduction loops: {b['kinds'].count('R')}" if "R" in b["kinds"] else ""
        rows.append(f'- "{b["name"]}": {len(b["loops"])} loops ({loops}) = {ext}{red}')
    if len(blocks) > limit:
        rows.append(f"- ... {len(blocks) - limit} more blocks")
    return "\n".join(rows)


def example_trace(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A trace that applies to this kernel, to show the form (not a tuned schedule): inline the first
    elementwise producer, take the last block's loops (as many names as it has loops) and run its
    first loop longer than 1 in parallel; a reduction gets its init split off."""
    if not blocks:
        return []
    last = blocks[-1]
    steps: list[dict[str, Any]] = []
    inline = next((b for b in blocks[:-1] if b["kinds"] and "R" not in b["kinds"]), None)
    if inline is not None:
        steps.append({"prim": "compute_inline", "args": [inline["name"]]})
    n = max(len(last["loops"]), 1)
    names = [f"l{i}" for i in range(n)]
    kinds = last["kinds"] or "S" * n
    outer = next((nm for nm, (_, ext), k in zip(names, last["loops"], kinds, strict=False)
                  if k == "S" and ext != "1"), names[0])
    steps += [{"prim": "get_sblock", "args": [last["name"]], "out": ["b"]},
              {"prim": "get_loops", "args": ["b"], "out": names},
              {"prim": "parallel", "args": [outer]}]
    if "R" in kinds:
        steps.append({"prim": "decompose_reduction", "args": ["b", names[kinds.index("R")]], "out": ["init"]})
    return steps


_BY_NAME = ("get_sblock", "compute_inline", "reverse_compute_inline")


def trace_name_errors(trace: Any, blocks: list[str]) -> str | None:
    """A block name the kernel does not have, said with the names it does have (TVM's own error for
    this is long and names no alternative). None when fine or when the blocks are not known."""
    if not blocks or not isinstance(trace, list):
        return None
    handles: set[str] = set()
    for n, step in enumerate(trace):
        if not isinstance(step, dict):
            continue
        args = step.get("args") or []
        if step.get("prim") in _BY_NAME and args and isinstance(args[0], str) \
                and args[0] not in blocks and args[0] not in handles:
            return f"step {n} ({step['prim']}): no block named {args[0]!r}; the blocks are {blocks}"
        handles.update(o for o in step.get("out") or [] if isinstance(o, str))
    return None


# -- small schemas ---------------------------------------------------------------------------------

_NAME = {"type": "string", "maxLength": 24}
_RATIONALE = {"type": "string", "maxLength": 100}


def _names(lo: int, hi: int) -> dict[str, Any]:
    return {"type": "array", "items": _NAME, "minItems": lo, "maxItems": hi}


def _step(prim: Any, args: dict[str, Any], out: dict[str, Any] | None = None) -> dict[str, Any]:
    props: dict[str, Any] = {"prim": prim if isinstance(prim, dict) else {"const": prim}, "args": args}
    if out is not None:
        props["out"] = out
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def trace_step_schema(blocks: list[str]) -> dict[str, Any]:
    """The steps a small model can get right: each primitive with its own argument shape, and block
    names (for `get_sblock` and the inlining primitives) from the kernel's real blocks."""
    block = {"enum": blocks} if blocks else _NAME
    one_block = {"type": "array", "items": block, "minItems": 1, "maxItems": 1}
    factors = {"type": "array", "items": {"type": ["integer", "null"]}, "minItems": 2, "maxItems": 3}
    return {"anyOf": [
        _step("get_sblock", one_block, _names(1, 1)),
        _step("get_loops", _names(1, 1), _names(1, 8)),
        _step({"enum": ["compute_inline", "reverse_compute_inline"]}, one_block),
        _step("split", {"type": "array", "prefixItems": [_NAME, factors], "items": False,
                        "minItems": 2, "maxItems": 2}, _names(2, 3)),
        _step("fuse", _names(2, 4), _names(1, 1)),
        _step("reorder", {"type": "array", "items": _names(2, 8), "minItems": 1, "maxItems": 1}),
        _step({"enum": ["parallel", "vectorize", "unroll"]}, _names(1, 1)),
        _step("decompose_reduction", _names(2, 2), _names(1, 1)),
    ]}


def _item(level: str, kind: str, payload: dict[str, Any], target: dict[str, Any] | None) -> dict[str, Any]:
    props: dict[str, Any] = {"level": {"const": level}, "kind": {"const": kind}}
    if target is not None:
        props["target"] = target
    props["rationale"] = _RATIONALE  # before the payload: a sentence of reasoning, then the edit
    props["payload"] = {"type": "object", "properties": payload, "required": list(payload),
                        "additionalProperties": False}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _small_l0(kernel: dict[str, Any], blocks: list[str], backend: str, source: bool,
              max_steps: int) -> list[dict[str, Any]]:
    return [_item("L0", "pass", {"name": {"enum": list(L0_PASSES)}}, None)]


def _small_l1(kernel: dict[str, Any], blocks: list[str], backend: str, source: bool,
              max_steps: int) -> list[dict[str, Any]]:
    trace = {"type": "array", "items": trace_step_schema(blocks), "minItems": 1, "maxItems": max_steps}
    return [_item("L1", "trace", {"trace": trace}, kernel)]


def _small_l2(kernel: dict[str, Any], blocks: list[str], backend: str, source: bool,
              max_steps: int) -> list[dict[str, Any]]:
    b = get_backend(backend)
    # the option sets the backend's record offers (LLVM's; none on a GPU backend)
    option_sets = [o for o in b.option_sets if set(o) <= b.compile_options]
    items = [_item("L2", "compile_options", {"options": {"enum": option_sets}}, None)] if option_sets else []
    if source:
        lang = b.l2[0].name if b.l2 else "cpp"  # the backend's first L2 language is its default
        items.append(_item("L2", "source", {"language": {"const": lang}, "entry": {"type": "string", "maxLength": 64},
                                            "text": {"type": "string"}}, kernel))
    return items


def _small_generic(level: str, kernel: dict[str, Any]) -> list[dict[str, Any]]:
    """A level without a small schema of its own: each edit kind of its spec, its payload fields as
    strings."""
    return [_item(level, kind, {f: {"type": "string"} for f in ek.payload}, kernel if ek.target else None)
            for kind, ek in LEVEL_SPECS[level].edit_kinds.items()]


# The small schemas offer a subset of a level's edit kinds, with enums of real names (a 0.5B model
# fills an enum, not a free-form trace of any primitive); the other kinds stay for large models
_SMALL: dict[str, Callable[..., list[dict[str, Any]]]] = {"L0": _small_l0, "L1": _small_l1, "L2": _small_l2}


def small_items(level: str, *, kernels: list[str], blocks: list[str], backend: str,
                source: bool, max_steps: int = 10) -> list[dict[str, Any]]:
    kernel = {"enum": kernels} if kernels else _NAME
    items: list[dict[str, Any]] = []
    for lv in levels_of(level):
        if lv in _SMALL:
            items += _SMALL[lv](kernel, blocks, backend, source, max_steps)
        elif lv in LEVEL_SPECS:
            items += _small_generic(lv, kernel)
    return items


def small_edit_tool(level: str, *, kernels: list[str], blocks: list[str], backend: str = "llvm",
                    source: bool = False, max_edits: int = 3) -> dict[str, Any]:
    """The `propose_edits` tool with a per-level schema of enums (see the module docstring)."""
    items = small_items(level, kernels=kernels, blocks=blocks, backend=backend, source=source)
    if not items:
        # an empty anyOf is no JSON schema a grammar can be made of: llama-cpp-python's server crashed
        # (SIGSEGV) on the rule it made of one, and with it every later call of the run
        raise ValueError(f"no {level} edit to offer a small model on {backend}"
                         + ("" if source else " without the kernel's source (it did not fit the prompt)"))
    item = items[0] if len(items) == 1 else {"anyOf": items}
    return {"name": EDIT_TOOL_NAME,
            "description": "Propose edits to the candidate; they are built, checked and timed.",
            "parameters": {"type": "object", "properties": {"edits": {
                "type": "array", "items": item, "minItems": 1, "maxItems": max(1, max_edits)}},
                "required": ["edits"], "additionalProperties": False}}
