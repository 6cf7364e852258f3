"""L1 rules for CUDA (and the GPU shapes the OpenCL rules reuse): blockIdx / threadIdx bindings instead of
parallel / vectorise, shared-memory tiles for matmuls. Every trace is replayed before it is returned."""

from __future__ import annotations

from typing import Any

from agents.common import KernelInfo, Recorder, _inline_around, _pick_axes, divisors


def _safe(fn, *args):
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 - a rule that does not fit this kernel yields no trace
        return None


def cuda_trace(func, info: KernelInfo, threads: int, vec: int = 1) -> list[dict[str, Any]] | None:
    """Every remaining block: spatial loops fused, split into blockIdx.x x threadIdx.x; reductions
    keep their reduction loops serial per thread (correct for any pattern, simple to check). With
    `vec` > 1, element-wise blocks get `vec` consecutive outputs per thread, vectorised (float4
    loads and stores where the extent divides)."""
    r = Recorder(func)
    keep = set(info.outputs) | {b.name for b in info.blocks if b.is_reduction}
    left = _inline_around(r, info, keep, epilogue_ok=False)
    for n in left:
        b = r.block(n)
        bi = info.block(n)
        loops = r.loops(b)
        ns = len(bi.spatial) if bi.is_reduction else len(loops)
        if bi.is_reduction and len(loops) != len(bi.iters):
            return None
        sp = loops[:ns]
        f = r.do("fuse", *sp)[0] if len(sp) > 1 else sp[0]
        n_sp = r.extent(f)
        if vec > 1 and not bi.is_reduction and n_sp % vec == 0 and n_sp // vec >= threads:
            bx, tx, vx = r.do("split", f, [None, threads, vec])
            r.do("vectorize", vx)
        else:
            t = threads if n_sp >= threads else max(d for d in divisors(n_sp) if d <= threads)
            bx, tx = r.do("split", f, [None, t])
        r.do("bind", bx, "blockIdx.x")
        r.do("bind", tx, "threadIdx.x")
    return r.steps


def _gemm_main(r: Recorder, info: KernelInfo):
    """What both CUDA GEMM traces start from: the main block with its neighbours inlined around it,
    its loops by iterator name and extent, and the two output axes to tile (None: loops don't match)."""
    main = info.block(info.main)  # type: ignore[arg-type]
    left = _inline_around(r, info, {main.name} | set(info.outputs))
    mb = r.block(main.name)
    loops = r.loops(mb)
    if len(loops) != len(main.iters):
        return None
    vec, til = _pick_axes(info)
    by_var = dict(zip([v for v, _, _ in main.iters], loops, strict=True))
    ext = {v: e for v, _, e in main.iters}
    return main, left, mb, by_var, ext, vec, til


def cuda_matmul_trace(func, info: KernelInfo, tile: int) -> list[dict[str, Any]] | None:
    """GEMM-like main block: a tile x tile output block per CUDA block, one output per thread."""
    r = Recorder(func)
    got = _gemm_main(r, info)
    if got is None:
        return None
    main, left, mb, by_var, ext, vec, til = got
    if til is None or ext[vec] % tile or ext[til] % tile:
        return None
    j0, j1 = r.do("split", by_var[vec], [None, tile])
    i0, i1 = r.do("split", by_var[til], [None, tile])
    outer = [by_var[v] for v, k, _ in main.iters if k == "S" and v not in (vec, til)]
    red = [by_var[v] for v, k, _ in main.iters if k == "R"]
    r.do("reorder", outer + [i0, j0, i1, j1] + red)
    bx = r.do("fuse", *(outer + [i0, j0]))[0]
    tx = r.do("fuse", i1, j1)[0]
    r.do("bind", bx, "blockIdx.x")
    r.do("bind", tx, "threadIdx.x")
    for n in left:
        if n == main.name:
            continue
        b = r.block(n)
        if not r.try_("reverse_compute_at", b, tx):
            return None
    return r.steps


def cuda_matmul_shared_trace(func, info: KernelInfo, tile: int) -> list[dict[str, Any]] | None:
    """GEMM-like main block, shared-memory tiled: a tile x tile output block per CUDA block, the
    reduction split by `tile`, both operands' tile x tile slices staged in shared memory once per
    reduction step and fetched cooperatively by the block's threads."""
    r = Recorder(func)
    got = _gemm_main(r, info)
    if got is None:
        return None
    main, left, mb, by_var, ext, vec, til = got
    red = [v for v, k, _ in main.iters if k == "R"]
    if til is None or len(red) != 1 or ext[vec] % tile or ext[til] % tile or ext[red[0]] % tile:
        return None
    j0, j1 = r.do("split", by_var[vec], [None, tile])
    i0, i1 = r.do("split", by_var[til], [None, tile])
    k0, k1 = r.do("split", by_var[red[0]], [None, tile])
    outer = [by_var[v] for v, k, _ in main.iters if k == "S" and v not in (vec, til)]
    r.do("reorder", outer + [i0, j0, i1, j1, k0, k1])
    bx = r.do("fuse", *(outer + [i0, j0]))[0]
    tx = r.do("fuse", i1, j1)[0]
    r.do("bind", bx, "blockIdx.x")
    r.do("bind", tx, "threadIdx.x")
    for idx in (0, 1):
        sh = r.do("cache_read", mb, idx, "shared")[0]
        r.do("compute_at", sh, k0)
        own = r.loops(sh)[3:]  # below blockIdx, threadIdx and the reduction step: the slice's loops
        fl = r.do("fuse", *own)[0] if len(own) > 1 else own[0]
        _, ft = r.do("split", fl, [None, tile * tile])
        r.do("bind", ft, "threadIdx.x")
    # the accumulator in a register, written back once per thread
    acc = r.try_("cache_write", mb, 0, "local")
    if acc:
        r.try_("reverse_compute_at", acc[0], tx)
    for n in left:
        if n == main.name:
            continue
        if not r.try_("reverse_compute_at", r.block(n), tx):
            return None
    return r.steps


def cuda_variants(func, info: KernelInfo) -> list[tuple[str, list[dict[str, Any]] | None]]:
    out: list[tuple[str, list[dict[str, Any]] | None]] = []
    if info.kind in ("matmul", "batch_matmul"):
        out.append(("cuda matmul 16x16 tile, operands staged in shared memory",
                    _safe(cuda_matmul_shared_trace, func, info, 16)))
        out.append(("cuda matmul 16x16 thread tile", _safe(cuda_matmul_trace, func, info, 16)))
        out.append(("cuda matmul 8x8 thread tile", _safe(cuda_matmul_trace, func, info, 8)))
    out.append(("cuda: fused spatial loops, 256 threads, 4-wide vector loads/stores",
                _safe(cuda_trace, func, info, 256, 4)))
    out.append(("cuda: fused spatial loops, 256 threads", _safe(cuda_trace, func, info, 256)))
    out.append(("cuda: fused spatial loops, 128 threads", _safe(cuda_trace, func, info, 128)))
    return out


# ----------------------------------------------------------------------------- the agent
