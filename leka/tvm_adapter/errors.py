"""TVM errors as data: what an agent or a user can act on, without C++ backtraces."""

from __future__ import annotations

import re
from collections.abc import Sequence


class ImportFailure(Exception):
    """torch.export or the Relax importer rejected the model; `ops` names what it could not map."""

    def __init__(self, message: str, ops: Sequence[str] = ()):
        super().__init__(message)
        self.ops = list(ops)


def first_line(e: BaseException) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    # TVM errors end with the useful line; Python errors start with it
    return (lines[-1] if lines and "Traceback" in str(e) else (lines[0] if lines else repr(e)))[:400]


def error_text(e: BaseException, limit: int = 2000) -> str:
    """A TVM / TVMScript error as an agent can act on it: the diagnostic and the offending source
    line (TVMScript prints `--> file:line` plus the line with a caret), without C++ backtraces."""
    raw = str(e).strip()
    lines = raw.splitlines()
    keep: list[str] = []
    skip_bt = False
    for ln in lines:
        s = ln.strip()
        if s.startswith("Traceback") or s.startswith("Stack trace"):
            skip_bt = True
            continue
        if skip_bt and (s.startswith("File ") or re.match(r"^\d+: ", s) or s.startswith("at ")):
            continue
        skip_bt = False
        keep.append(ln.rstrip())
    text = "\n".join(k for k in keep if k.strip()) or repr(e)
    text = f"{type(e).__name__}: {text}" if not text.startswith(type(e).__name__) else text
    return text if len(text) <= limit else text[: limit // 2] + "\n...\n" + text[-limit // 2:]
