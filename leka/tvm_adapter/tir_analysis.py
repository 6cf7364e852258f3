"""TIR analysis for the profilers: FLOP estimates and per-block summaries."""

from __future__ import annotations

from typing import Any

import numpy as np
import tvm
from tvm import s_tir


def estimate_tir_flops(func: tvm.tirx.PrimFunc) -> float | None:
    """TVM's own FLOP estimate of a PrimFunc (s_tir.analysis); None where it gives up."""
    from tvm.s_tir.analysis import estimate_tir_flops as _est

    try:
        return float(_est(tvm.IRModule({"main": func})))
    except Exception:  # noqa: BLE001 - callers fall back to counting block bodies
        return None


def _is_load(e) -> bool:
    # tirx.BufferLoad is a factory function in 0.27 (the node class prints as TensorLoad)
    return type(e).__name__ in ("TensorLoad", "BufferLoad")


_ARITH = ("Add", "Sub", "Mul", "Div", "Max", "Min", "FloorDiv", "FloorMod", "Mod", "Select")


def _expr_ops(e) -> tuple[int, list[str]]:
    """Float arithmetic nodes in a stored value (index math inside loads is not counted) and the
    kinds of the top-level operands of every Mul (to spot multiply-accumulate of two loads)."""
    if _is_load(e):
        return 0, []
    name = type(e).__name__
    is_float = "float" in str(getattr(e, "ty", ""))  # 0.27: PrimExpr dtype is `.ty`
    op = str(getattr(getattr(e, "op", None), "name", ""))
    n = 1 if is_float and (name in _ARITH or (name == "Call" and "if_then_else" not in op)) else 0
    muls: list[str] = []
    if name == "Mul" and is_float:
        muls.append("loads" if _is_load(e.a) and _is_load(e.b)
                    else "other")
    kids = [getattr(e, k) for k in ("a", "b", "value", "condition", "true_value", "false_value")
            if hasattr(e, k)]
    kids += list(getattr(e, "args", []) or [])
    for k in kids:
        if isinstance(k, tvm.ir.Expr):
            kn, km = _expr_ops(k)
            n += kn
            muls += km
    return n, muls


def _is_copy(e) -> bool:
    """A stored value that only moves data: a load, a cast of one, a constant, or a padded load."""
    from tvm import tirx

    if _is_load(e) or type(e).__name__ in ("FloatImm", "IntImm"):
        return True
    if isinstance(e, tirx.Cast):
        return _is_copy(e.value)
    if type(e).__name__ == "Call" and "if_then_else" in str(getattr(e.op, "name", "")):
        return all(_is_copy(a) for a in list(e.args)[1:])
    if type(e).__name__ == "Select":
        return _is_copy(e.true_value) and _is_copy(e.false_value)
    return False


_ITER_KINDS = {0: "S", 2: "R", 1: "T", 3: "O", 4: "U"}


def sblock_summaries(func: tvm.tirx.PrimFunc) -> list[dict[str, Any]]:
    """One record per s_tir block (root excluded): name, iteration kinds ("S"/"R"/...), how often
    the block runs (product of its iteration domains, so splits and reorders do not change it), float
    ops per run, whether it only copies data, and whether it multiplies two loads (multiply-add)."""
    from tvm import tirx

    out: list[dict[str, Any]] = []

    def visit(stmt) -> None:
        if stmt is None:
            return
        if isinstance(stmt, s_tir.SBlockRealize):
            if stmt.block.name_hint != "root":
                out.append(_sblock_summary(stmt.block))
            visit(stmt.block.body)
            return
        for attr in ("seq",):
            if hasattr(stmt, attr):
                for s in getattr(stmt, attr):
                    visit(s)
                return
        for attr in ("block", "body", "then_case", "else_case"):
            child = getattr(stmt, attr, None)
            if isinstance(child, (tirx.Stmt, s_tir.SBlock)):
                visit(child)

    visit(func.body)
    return out


def _sblock_summary(b) -> dict[str, Any]:
    iters = "".join(_ITER_KINDS.get(int(iv.iter_type), "?") for iv in b.iter_vars)
    extents = []
    for iv in b.iter_vars:
        try:
            extents.append(int(iv.dom.extent))
        except (TypeError, ValueError):
            extents.append(1)
    stores: list[Any] = []
    _collect_stores(b.body, stores)
    ops, muls, copy = 0, [], bool(stores)
    for st in stores:
        n, m = _expr_ops(st.value)
        ops, muls = ops + n, muls + m
        copy = copy and _is_copy(st.value)
    return {"name": str(b.name_hint), "iters": iters, "extents": extents,
            "executions": int(np.prod(extents)) if extents else 1, "ops": ops,
            "copy": copy, "mul_of_loads": "loads" in muls, "has_init": b.init is not None,
            "stores": [str(st.buffer.name) for st in stores]}


def _collect_stores(stmt, acc: list) -> None:
    """Stores that belong to this block, not to nested blocks (those are visited on their own)."""
    from tvm import tirx

    if stmt is None or isinstance(stmt, s_tir.SBlockRealize):
        return
    if isinstance(stmt, tirx.BufferStore):
        acc.append(stmt)
        return
    if hasattr(stmt, "seq"):
        for s in stmt.seq:
            _collect_stores(s, acc)
        return
    for attr in ("body", "then_case", "else_case"):
        child = getattr(stmt, attr, None)
        if isinstance(child, tirx.Stmt):
            _collect_stores(child, acc)
