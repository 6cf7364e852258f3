"""FLOPs, compulsory bytes and an op kind for one PrimFunc, read from its TIR.

FLOPs come from TVM's own estimator (`s_tir.analysis.estimate_tir_flops`); where it returns
nothing (it gives 0 for `T.pow`, for example) a count of float operations in each block body times
the block's iteration domain is used instead. Bytes are the sizes of the buffer parameters: the
traffic a kernel cannot avoid, so intensity = flops / bytes is an upper bound on the real one.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from leka import tvm_adapter as A
from leka.ir.classify import classify

__all__ = ["buffer_bytes", "classify", "count_flops", "describe", "kernel_cost"]


def _dtype_bytes(dtype: str) -> int:
    if dtype == "bool":
        return 1
    m = re.fullmatch(r"[a-z]+?(\d+)(?:x(\d+))?", dtype)  # float32 -> 4, bfloat16 -> 2, float32x4 -> 16
    return max(1, int(m.group(1)) // 8) * int(m.group(2) or 1) if m else 4


def buffer_bytes(func) -> int:
    """Sum of the buffer parameters' sizes: inputs read once, outputs written once."""
    total = 0
    for _name, shape, dtype in A.buffer_signature(func):
        total += int(np.prod(shape, dtype=np.int64)) * _dtype_bytes(dtype)
    return total


def count_flops(func) -> int:
    """Float ops in block bodies x block iteration domains (the fallback estimator)."""
    return sum(b["executions"] * b["ops"] for b in A.sblock_summaries(func))


def kernel_cost(func) -> tuple[float, int]:
    """(FLOPs, compulsory bytes) of one PrimFunc."""
    est = A.estimate_tir_flops(func)
    flops = est if est else float(count_flops(func))
    return flops, buffer_bytes(func)


def describe(func) -> dict[str, Any]:
    """Everything static the profiler needs about one PrimFunc, computed in one TIR walk."""
    blocks = A.sblock_summaries(func)
    est = A.estimate_tir_flops(func)
    flops = est if est else float(sum(b["executions"] * b["ops"] for b in blocks))
    return {"flops": flops, "bytes": buffer_bytes(func), "kind": classify(func, blocks),
            "flops_source": "tvm" if est else "count", "blocks": [b["name"] for b in blocks]}
