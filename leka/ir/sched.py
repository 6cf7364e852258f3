"""L1 schedule traces: a small, JSON, LLM-writable form of `s_tir.Schedule` calls.

A trace is a list of steps ``{"prim": NAME, "args": [...], "kwargs": {...}, "out": [names]}``.
A string argument that names an earlier output is replaced by that handle (a block or a loop);
lists are resolved element-wise; anything else is passed as is. Example (tile a matmul)::

    [{"prim": "get_sblock", "args": ["matmul"], "out": ["b"]},
     {"prim": "get_loops", "args": ["b"], "out": ["i", "j", "k"]},
     {"prim": "split", "args": ["j", [null, 16]], "out": ["j0", "j1"]},
     {"prim": "reorder", "args": [["i", "j0", "k", "j1"]]},
     {"prim": "parallel", "args": ["i"]},
     {"prim": "vectorize", "args": ["j1"]},
     {"prim": "decompose_reduction", "args": ["b", "k"], "out": ["init"]}]

Only the primitives in PRIMITIVES may be called: a trace is data from an agent, not code.
"""

from __future__ import annotations

from typing import Any

from leka import tvm_adapter as A

PRIMITIVES = frozenset({
    "get_sblock", "get_loops", "get_child_blocks", "get_producers", "get_consumers",
    "split", "fuse", "reorder", "parallel", "vectorize", "unroll", "bind",
    "cache_read", "cache_write", "compute_at", "reverse_compute_at", "compute_inline",
    "reverse_compute_inline", "decompose_reduction", "rfactor", "annotate", "storage_align",
    "set_scope", "add_unit_loop", "blockize", "transform_layout", "pad_einsum",
    # what MetaSchedule's traces use besides (leka.tvm_adapter.ms_tool): its postprocessors remove
    # their own annotations; a compute location is a recorded decision among the legal ones
    "unannotate", "sample_compute_location",
})


class TraceError(ValueError):
    """A step that cannot be applied; the message names the step so an agent can fix it."""


def _resolve(v: Any, env: dict[str, Any]) -> Any:
    if isinstance(v, str) and v in env:
        return env[v]
    if isinstance(v, list):
        return [_resolve(x, env) for x in v]
    return v


def apply_trace(func, steps: list[dict[str, Any]]):
    """Apply `steps` to a PrimFunc; return the scheduled PrimFunc. Raises TraceError."""
    sch = A.schedule(func)
    env: dict[str, Any] = {}
    for n, step in enumerate(steps):
        if not isinstance(step, dict) or "prim" not in step:
            raise TraceError(f"step {n}: expected an object with 'prim', got {step!r}")
        prim = step["prim"]
        if prim not in PRIMITIVES:
            raise TraceError(f"step {n}: primitive {prim!r} is not allowed; use one of {sorted(PRIMITIVES)}")
        args = [_resolve(a, env) for a in step.get("args", [])]
        kwargs = {k: _resolve(v, env) for k, v in (step.get("kwargs") or {}).items()}
        if prim == "reorder" and len(args) == 1 and isinstance(args[0], list):
            args = args[0]
        try:
            res = getattr(sch, prim)(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - TVM's ScheduleError and friends become data
            msg = str(e).strip().splitlines()
            detail = next((ln for ln in msg if "Error" in ln or "error" in ln), msg[-1] if msg else repr(e))
            raise TraceError(f"step {n} ({prim} {step.get('args', [])}): {detail[:500]}") from e
        outs = step.get("out") or []
        if outs:
            vals = list(res) if isinstance(res, (list, tuple)) or type(res).__name__ == "Array" else [res]
            if len(vals) != len(outs):
                raise TraceError(f"step {n} ({prim}): produced {len(vals)} handles, 'out' names {len(outs)}")
            env.update(zip(outs, vals, strict=True))
    return sch.mod["main"]
