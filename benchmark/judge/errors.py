"""A failure as the evaluation's verdict: `set_error` writes its kind and message into the result,
`short_error` says an exception in one line (the in-process, the sandboxed and the remote job)."""

from __future__ import annotations

import re
from typing import Any

# a compiler's diagnostic line (nvcc, ptxas, NVRTC, gcc, clang, PoCL's build log)
_DIAG = re.compile(r"\berror\b|ptxas|fatal|undefined reference|too much (?:shared|local) data", re.I)


def set_error(res: Any, kind: str, msg: str) -> Any:
    res.error_kind = kind
    res.error = msg[:4000]
    return res


def short_error(e: BaseException) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    if not lines:
        return type(e).__name__
    # TVM's messages put the diagnostic last, after a C++ backtrace
    tail = lines[-1] if len(lines) > 3 and "Traceback" in str(e) else " | ".join(lines[:3])
    # a failed CUDA / OpenCL compile quotes the whole source first: its diagnostics are further down
    diag = [ln.strip() for ln in lines[3:] if _DIAG.search(ln)]
    if diag and not _DIAG.search(tail):
        tail = " | ".join(diag[:3])
    return f"{type(e).__name__}: {tail}"
