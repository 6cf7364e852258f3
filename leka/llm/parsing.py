"""Turn a model's reply into `Edit`s (or a route), with error messages a model can act on.

Order of trust: the tool call's arguments; else JSON in the text (the whole text, a ```json fence,
then the first decodable object or array). Shape errors are reported per edit ("edit 2: ...") so a
repair prompt can name exactly what to fix; legality (does the trace apply, does the text parse) is
the caller's `check`, not this module's.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from leka.core.types import Edit
from leka.llm.base import Completion
from leka.llm.prompting import ANY_LEVEL, EDIT_KINDS, L0_PASSES, L2_LANGUAGES, levels_of


class ParseError(ValueError):
    """The reply holds no usable JSON; the message says what was expected."""


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """The JSON value in `text`: whole text, then fenced blocks, then the first decodable {...} / [...]."""
    s = text.strip()
    if not s:
        raise ParseError("the reply was empty; expected a JSON object")
    try:
        return json.loads(s)
    except json.JSONDecodeError:
        pass
    for m in _FENCE.finditer(s):
        try:
            return json.loads(m.group(1))
        except json.JSONDecodeError as e:
            if (v := _first_value(_lenient(m.group(1)))) is not None:
                return v
            raise ParseError(f"the ```json block is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    for text in (s, _lenient(s)):
        if (v := _first_value(text)) is not None:
            return v
    raise ParseError("no JSON object found in the reply; call the tool, or reply with its arguments as "
                     "one JSON object")


def _first_value(s: str) -> Any:
    dec = json.JSONDecoder()
    for i, ch in enumerate(s):
        if ch in "{[":
            try:
                v, _ = dec.raw_decode(s, i)
            except json.JSONDecodeError:
                continue
            if isinstance(v, (dict, list)) and v:
                return v
    return None


# Small models write almost-JSON: bare words where strings belong (pass names pasted from a list),
# Python's True/False/None, trailing commas. Quoting a bare word is safe: JSON has no bare words.
_BARE = re.compile(r'(?<=[:\[,])(\s*)([A-Za-z_][A-Za-z0-9_.\-]*)(?=\s*[,}\]])')
_PY_CONST = {"True": "true", "False": "false", "None": "null"}


def _lenient(s: str) -> str:
    s = re.sub(r",(\s*[}\]])", r"\1", s)

    def quote(m: re.Match) -> str:
        word = m.group(2)
        if word in ("true", "false", "null"):
            return m.group(0)
        return m.group(1) + (_PY_CONST.get(word) or json.dumps(word))

    return _BARE.sub(quote, s)


def reply_data(comp: Completion) -> Any:
    return comp.tool_args if comp.tool_args is not None else extract_json(comp.text)


def _payload_error(level: str, kind: str, payload: dict[str, Any]) -> str | None:
    if kind == "pass":
        name = payload.get("name")
        if name not in L0_PASSES:
            return f"payload.name must be one of {list(L0_PASSES)}, got {name!r}"
    elif kind in ("relax_text", "tir_text"):
        if not isinstance(payload.get("text"), str) or not payload["text"].strip():
            return "payload.text must be a non-empty string holding the whole TVMScript"
    elif kind == "trace":
        tr = payload.get("trace")
        if not isinstance(tr, list) or not tr:
            return "payload.trace must be a non-empty list of steps {\"prim\", \"args\", \"kwargs\", \"out\"}"
        for n, step in enumerate(tr):
            if not isinstance(step, dict) or not isinstance(step.get("prim"), str):
                return f"payload.trace step {n} must be an object with a string 'prim', got {json.dumps(step)[:120]}"
    elif kind == "traces":
        trs = payload.get("traces")
        if not isinstance(trs, dict) or not trs:
            return "payload.traces must be a non-empty object {PrimFunc name: [steps]}"
        for name, tr in trs.items():
            if not isinstance(tr, list) or not tr or not all(isinstance(x, dict) and isinstance(x.get("prim"), str)
                                                             for x in tr):
                return f"payload.traces[{name!r}] must be a non-empty list of steps with a string 'prim'"
    elif kind == "source":
        if payload.get("language") not in L2_LANGUAGES:
            return f"payload.language must be one of {list(L2_LANGUAGES)}, got {payload.get('language')!r}"
        if not isinstance(payload.get("text"), str) or not payload["text"].strip():
            return "payload.text must be a non-empty string holding the source"
        if payload.get("entry") is not None and not isinstance(payload["entry"], str):
            return "payload.entry must be a string (the exported symbol) or null"
    elif kind == "compile_options":
        if not isinstance(payload.get("options"), dict) or not payload["options"]:
            return 'payload.options must be a non-empty object, e.g. {"fast-math-contract": true}'
    return None


def _level(v: Any) -> Any:
    """1, "1", "l1", "L1 " -> "L1" (small models write the level as a number)."""
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and 0 <= v <= 2:
        return f"L{v}"
    if isinstance(v, str):
        t = v.strip().upper()
        return f"L{t}" if t in ("0", "1", "2") else t
    return v


_PAYLOAD_KEYS = ("name", "trace", "text", "language", "entry", "options")


def _pass_name(v: Any) -> Any:
    if not isinstance(v, str):
        return v
    t = v.strip().strip("'\"`").removesuffix("()").strip().lower().replace("-", "_").replace(" ", "_")
    return t if t in L0_PASSES else v


def _normalise(it: dict[str, Any], level: str, default_target: str | None) -> dict[str, Any]:
    """Mend the shapes small models were seen writing; anything still wrong is reported later."""
    it = dict(it)
    if "level" in it:
        it["level"] = _level(it["level"])
    elif level not in ANY_LEVEL:
        it["level"] = level
    payload = it.get("payload")
    if isinstance(payload, list) and (it.get("kind") == "trace" or it.get("level") == "L1"):
        payload = {"trace": payload}  # the trace given as the payload itself
    if payload is None and any(k in it for k in _PAYLOAD_KEYS):
        payload = {k: it.pop(k) for k in _PAYLOAD_KEYS if k in it}  # payload fields at the top
    if isinstance(payload, dict):
        payload = dict(payload)
        if "kind" not in it:
            kind = next((k for f, k in (("trace", "trace"), ("name", "pass"), ("options", "compile_options"),
                                        ("language", "source")) if f in payload), None)
            if kind is not None:
                it["kind"] = kind
        if it.get("kind") == "pass" and "name" in payload:
            payload["name"] = _pass_name(payload["name"])
        it["payload"] = payload
    lv, kind = it.get("level"), it.get("kind")
    if (default_target and not it.get("target") and lv in EDIT_KINDS and kind in EDIT_KINDS[lv]
            and EDIT_KINDS[lv][kind][0] is not None):
        it["target"] = default_target
    return it


def parse_edits(data: Any, level: str, *, default_target: str | None = None) -> tuple[list[Edit], list[str]]:
    """(well-formed edits, one error per rejected item). `level` is the agent's level (ANY_LEVEL: any).
    `default_target` names the kernel an edit without a target is for (the one the prompt showed)."""
    if isinstance(data, dict) and "edits" in data:
        items = data["edits"]
    elif isinstance(data, dict) and ("kind" in data or "payload" in data):
        items = [data]
    elif isinstance(data, dict) and isinstance(data.get("trace"), list) and level in ("L1", *ANY_LEVEL):
        items = [{"level": "L1", "kind": "trace", **data}]
    elif (isinstance(data, list) and data and level in ("L1", *ANY_LEVEL)
          and all(isinstance(x, dict) and "prim" in x for x in data)):
        items = [{"level": "L1", "kind": "trace", "payload": {"trace": data}}]  # a bare trace
    else:
        items = data
    if not isinstance(items, list):
        return [], ['expected {"edits": [ ... ]} with a list of edit objects']
    if not items:
        return [], ['"edits" was empty; propose at least one edit']
    allowed = levels_of(level)
    edits: list[Edit] = []
    errors: list[str] = []
    seen: set[str] = set()
    for n, it in enumerate(items):
        where = f"edit {n + 1}"
        if not isinstance(it, dict):
            errors.append(f"{where}: expected an object, got {type(it).__name__}")
            continue
        it = _normalise(it, level, default_target)
        lv = it.get("level")
        if lv not in allowed:
            errors.append(f"{where}: level must be one of {allowed}, got {lv!r}")
            continue
        kind = it.get("kind")
        if kind not in EDIT_KINDS[lv]:
            errors.append(f"{where}: kind for {lv} must be one of {list(EDIT_KINDS[lv])}, got {kind!r}")
            continue
        payload = it.get("payload")
        if not isinstance(payload, dict):
            errors.append(f"{where}: payload must be an object")
            continue
        target = it.get("target")
        if EDIT_KINDS[lv][kind][0] is not None and not (isinstance(target, str) and target):
            errors.append(f"{where}: {kind} needs target = the {EDIT_KINDS[lv][kind][0]}")
            continue
        if (msg := _payload_error(lv, kind, payload)) is not None:
            errors.append(f"{where}: {msg}")
            continue
        try:
            e = Edit(level=lv, kind=kind, target=target if isinstance(target, str) else None, payload=payload,
                     rationale=str(it.get("rationale") or ""))
        except ValidationError as ex:
            errors.append(f"{where}: {ex.errors()[0]['msg']}")
            continue
        key = json.dumps([e.level, e.kind, e.target, e.payload], sort_keys=True, default=str)
        if key not in seen:  # a model repeating itself should not cost two evaluations
            seen.add(key)
            edits.append(e)
    return edits, errors


def parse_route(data: Any, levels: list[str]) -> tuple[str, str]:
    """(level, reason) from {"level": ..., "reason": ...}; raises ParseError with a fixable message."""
    if not isinstance(data, dict):
        raise ParseError('expected an object {"level": ..., "reason": ...}')
    lv = _level(data.get("level"))
    if lv not in levels:
        raise ParseError(f"level must be one of {levels}, got {data.get('level')!r}")
    reason = data.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ParseError("reason must be a non-empty string naming the bottleneck")
    return lv, reason.strip()
