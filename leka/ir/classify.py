"""The kernel classifier: a PrimFunc's dominant op, read from the structure of its blocks (and the
names the legalizer gives them where structure alone cannot tell). Profiles (`profilers.flops`) and
the kernel views (`leka.ir.views`) report it; the router reads it (is a packed FMA expected?).

The rule L1 agent picks its *schedule template* with its own test on the main reduction block
(`agents.common._classify_main`): it schedules pooling windows like convolutions and grouped convs
like depthwise ones, which is the right template but the wrong name for a profile.
"""

from __future__ import annotations

from typing import Any

from leka import tvm_adapter as A
from leka.core.types import KernelKind

# names the legalizer gives to blocks (topi / relax legalize), for kinds structure alone cannot tell
_CONV_WORDS = ("conv",)
_DEPTHWISE_WORDS = ("depthwise", "group_conv")
_MATMUL_WORDS = ("matmul", "dense", "batch_matmul", "gemm", "T_matmul")


def classify(func, blocks: list[dict[str, Any]] | None = None) -> KernelKind:
    """The kernel's dominant op: the first of conv / depthwise_conv / matmul / reduction / injective
    that any of its blocks is; "layout" when every block only moves data (transpose, reshape,
    broadcast, pad, layout_transform)."""
    blocks = A.sblock_summaries(func) if blocks is None else blocks
    if not blocks:
        return "injective"
    reductions = [b for b in blocks if "R" in b["iters"]]
    for b in reductions:
        name = b["name"].lower()
        if any(w in name for w in _CONV_WORDS):
            # depthwise: a grouped conv whose per-group input-channel reduction is 1 wide
            red = [e for k, e in zip(b["iters"], b["extents"], strict=False) if k == "R"]
            if any(w in name for w in _DEPTHWISE_WORDS) and red and red[0] == 1:
                return "depthwise_conv"
            return "conv"
    for b in reductions:
        named = any(w.lower() in b["name"].lower() for w in _MATMUL_WORDS)
        # a sum over products of two tensors with >= 2 free axes is a (batched) matmul
        if named or (b["mul_of_loads"] and b["iters"].count("S") >= 2):
            return "matmul"
    if reductions:
        return "reduction"
    if all(b["copy"] for b in blocks):
        return "layout"
    return "injective"
