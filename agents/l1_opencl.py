"""L1 rule agent for OpenCL: work-group tiling and vector widths, as s_tir.Schedule traces.

The CUDA structure (agents/l1_tir.py: spatial loops fused into get_group_id x get_local_id, GEMM
output tiles per work-group) with the two knobs that matter on mobile GPUs (Mali, Adreno) and on
CPU OpenCL (PoCL): the work-group size, and how many contiguous outputs one work-item computes as
one vector (a vectorised innermost loop becomes float2/float4/float8 loads and stores in OpenCL C).
"""

from __future__ import annotations

from typing import Any

from agents.common import KernelInfo, Recorder, _inline_around, divisors, vector_factor
from agents.l1_cuda import _safe, cuda_matmul_trace, cuda_trace
from agents.l1_tir import RuleL1Agent

WORK_GROUPS = (64, 128, 256)
VECTOR_WIDTHS = (4, 8, 2)


def vector_trace(func, info: KernelInfo, work_group: int, width: int) -> list[dict[str, Any]] | None:
    """Every block left after inlining: spatial loops fused, split into (group, work-item, vector);
    the vector loop vectorised. Reductions keep their reduction loops serial per work-item and get
    no vector (their spatial loop is not innermost)."""
    r = Recorder(func)
    keep = set(info.outputs) | {b.name for b in info.blocks if b.is_reduction}
    left = _inline_around(r, info, keep, epilogue_ok=False)
    vectorised = False
    for n in left:
        b = r.block(n)
        bi = info.block(n)
        loops = r.loops(b)
        if bi.is_reduction and len(loops) != len(bi.iters):
            return None
        ns = len(bi.spatial) if bi.is_reduction else len(loops)
        sp = loops[:ns]
        f = r.do("fuse", *sp)[0] if len(sp) > 1 else sp[0]
        n_sp = r.extent(f)
        v = 1 if bi.is_reduction else vector_factor(n_sp, width)
        per_group = n_sp // v
        wg = work_group if per_group >= work_group else max(d for d in divisors(per_group) if d <= work_group)
        if v > 1:
            bx, tx, vi = r.do("split", f, [None, wg, v])
            r.do("vectorize", vi)
            vectorised = True
        else:
            bx, tx = r.do("split", f, [None, wg])
        r.do("bind", bx, "blockIdx.x")
        r.do("bind", tx, "threadIdx.x")
    return r.steps if vectorised else None


def matmul_tile_trace(func, info: KernelInfo, tile: int) -> list[dict[str, Any]] | None:
    """The CUDA GEMM tile (one output per work-item, tile x tile per work-group) with the
    accumulator in private memory: with an epilogue computed at the work-item, TVM would otherwise
    keep the accumulator a whole-size buffer, which OpenCL C cannot declare inside a kernel."""
    steps = cuda_matmul_trace(func, info, tile)
    if steps is None or info.main in info.outputs:
        return steps
    return [*steps, {"prim": "get_sblock", "args": [info.main], "out": ["b_acc"]},
            {"prim": "set_scope", "args": ["b_acc", 0, "local"]}]


def opencl_variants(func, info: KernelInfo) -> list[tuple[str, list[dict[str, Any]] | None]]:
    out: list[tuple[str, list[dict[str, Any]] | None]] = []
    if info.kind in ("matmul", "batch_matmul"):
        out.append(("opencl: 16x16 output tile per work-group", _safe(matmul_tile_trace, func, info, 16)))
        out.append(("opencl: 8x8 output tile per work-group", _safe(matmul_tile_trace, func, info, 8)))
    for wg in (64, 128):
        for w in VECTOR_WIDTHS[:2]:
            out.append((f"opencl: work-group {wg}, float{w} per work-item", _safe(vector_trace, func, info, wg, w)))
    for wg in WORK_GROUPS:
        out.append((f"opencl: fused spatial loops, work-group {wg}", _safe(cuda_trace, func, info, wg)))
    return out


class OpenCLRuleL1Agent(RuleL1Agent):
    """RuleL1Agent with the OpenCL variants (work-group sizes x vector widths)."""

    def __init__(self, backend: str = "opencl", max_kernels: int = 2, root_params=None):
        super().__init__(backend, max_kernels, root_params)

    def raw_variants(self, func, info: KernelInfo, lanes: int,
                     wide: bool = False) -> list[tuple[str, list[dict[str, Any]] | None]]:
        # a widened round offers the same work-group grid again: its untried entries, on scheduled kernels too
        return opencl_variants(func, info)
