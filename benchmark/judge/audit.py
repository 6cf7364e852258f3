"""Outliers marked for audit (issue 43): numbers the judge accepts but a reader should not take on trust.
`EvalResult.extra["audit"]` is a list of reasons, shown by the run report (leka/report.py) and the
grid report (leka/exp/report.py); no verdict changes.

- A speedup over `evaluator.audit_speedup` (10x) against a tuned baseline or an engine: the
  baselines that are already good code (not untuned TVM, which is naive loops), where a 10x is more
  often an exploit or a degenerate task than a discovery.
- A reference output that is all zero or near constant: a kernel that returns a constant passes the
  check, so the task cannot tell computing from not computing (`experiments/check_degenerate_refs.py`
  lists the suite's). Near constant = the output's mean is within the task's tolerance of every
  element: what the check would accept from a constant.

numpy only (reports import it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

# every baseline kind but untuned TVM (benchmark/baselines.py BASELINES); a test keeps them in step
STRONG_BASELINES = ("tuned", "torch", "torch_compile", "torch_compile_cg", "ort", "mnn", "tensorrt")
_CHUNK = 1 << 20  # elements per pass: a reference of GiB is checked without a full-size temporary


def degenerate(arrays: Sequence[Any], atol: float = 1e-4, rtol: float = 1e-4) -> str | None:
    """Why a reference (its outputs) is degenerate: "output i all zero", "output i near constant (C)"
    (of two or more elements), or None. A non-finite or empty output is not called degenerate (other checks see it)."""
    why = []
    for i, a in enumerate(arrays):
        x = np.asarray(a).reshape(-1)
        if x.size == 0 or x.dtype.kind not in "fiub":
            continue
        if x.dtype.kind in "iub":
            x = x.astype(np.float64)
        if not np.isfinite(x).all():
            continue
        if not np.any(x):
            why.append(f"output {i} all zero")
            continue
        mean = float(x.mean(dtype=np.float64))
        # one value (a steering angle, an argmax, a score) is its own mean: constant across seeds it is not
        if x.size > 1 and all(np.all(np.abs(c - mean) <= atol + rtol * np.abs(c)) for c in _chunks(x)):
            why.append(f"output {i} near constant ({mean:.6g})")
    return "; ".join(why) or None


def _chunks(x: np.ndarray):
    for s in range(0, x.size, _CHUNK):
        yield x[s:s + _CHUNK].astype(np.float64, copy=False)


def reasons(baseline: str | None, speedup: float | None, degenerate_ref: str | None,
            threshold: float = 10.0) -> list[str]:
    out = []
    if speedup is not None and baseline in STRONG_BASELINES and speedup > threshold:
        out.append(f"speedup {speedup:.1f}x over {threshold:g}x against {baseline}")
    if degenerate_ref:
        out.append(f"degenerate reference: {degenerate_ref} (a constant passes the check)")
    return out


def flag(res, degenerate_ref: str | None, threshold: float = 10.0) -> list[str]:
    """Mark `res` (an EvalResult) for audit: `extra["audit"]` holds the reasons, absent when none."""
    why = reasons(res.baseline, res.speedup if res.correct else None, degenerate_ref, threshold)
    if why:
        res.extra["audit"] = why
    return why


def audit_step(st) -> bool:
    """The worker's last step (benchmark/judge/job.py STEPS): the reference's degeneracy was judged on seed 0
    during the check (`st.ref_degenerate`; the in-process path keeps seed 0's references)."""
    ref = st.ref_degenerate
    if ref is None and st.refs_by_seed:
        ref = degenerate(st.refs_by_seed[0], st.atol, st.rtol)
    flag(st.res, ref, float(st.cfg.get("audit_speedup", 10.0)))
    return True
