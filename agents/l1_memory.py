"""L1 rules for memory-bound CPU kernels (issue 44): element-wise kernels split at their longest
contiguous suffix and vectorised at the target's lanes, row reductions parallel over rows with vector
accumulators (rfactor), and the widened round's variants of both. GEMM-like rules stay in agents/l1_tir.py."""

from __future__ import annotations

from typing import Any

from agents.common import KernelInfo, Recorder, _inline_around, contiguous_suffix, divisors, vector_factor
from agents.l1_cuda import _safe

# below this many elements a parallel region costs more (thread wake-up) than it saves
PAR_MIN_ELEMS = 1 << 15


def _flat_parallel_vectorize(r: Recorder, block: str, lanes: int, min_par: int = 2, par: bool = True) -> None:
    """Fuse a block's spatial loops, split off a vector of lanes, parallelise the rest."""
    loops = r.loops(block)
    if not loops:
        return
    f = r.try_("fuse", *loops) if len(loops) > 1 else [loops[0]]
    if not f:
        return
    n = r.extent(f[0])
    vf = vector_factor(n, lanes) if n >= lanes else n
    if vf > 1 and n // vf >= 1:
        o, i = r.do("split", f[0], [None, vf])
        if par and n // vf >= min_par and n >= PAR_MIN_ELEMS:
            r.try_("parallel", o)
        r.try_("vectorize", i)
    elif par and n >= PAR_MIN_ELEMS:
        r.try_("parallel", f[0])


def injective_trace(func, info: KernelInfo, lanes: int, par: bool = True, vm: int = 1) -> list[dict[str, Any]] | None:
    """Everything inlined into the output block; its loops split at the longest suffix every input reads
    contiguously or not at all (`contiguous_suffix`: a [1,C,1,1] scale broadcast over H x W is invariant
    in the fused H*W loop, while fusing C in too would make its vector load a gather), that suffix fused
    and split into [outer, vm, lanes] (lanes from the target; a divisor, so no scalar tail), the vm
    vectors of a step unrolled, and the rest fused with the outer part and parallel."""
    r = Recorder(func)
    outs = set(info.outputs) or {info.blocks[-1].name}
    left = _inline_around(r, info, outs, epilogue_ok=False)
    for n in left:
        b = r.block(n)
        j = contiguous_suffix(r, b)
        loops = r.loops(b)
        if not loops:
            continue
        if j <= 0 or j >= len(loops):
            if vm <= 1:
                _flat_parallel_vectorize(r, b, lanes, par=par)
                continue
            j = len(loops)
        _suffix_parallel_vectorize(r, loops, j, lanes, par, vm)
    return r.steps


def _suffix_parallel_vectorize(r: Recorder, loops: list[str], j: int, lanes: int, par: bool, vm: int) -> None:
    """The last j loops fused and split [outer, vm, lanes]; the loops before them fused with outer, parallel."""
    suf = r.try_("fuse", *loops[-j:]) if j > 1 else [loops[-1]]
    if not suf:
        return
    n = r.extent(suf[0])
    vf = vector_factor(n, lanes) if n >= lanes else n
    if vf <= 1:
        return
    m = max(d for d in divisors(n // vf) if d <= max(1, vm))  # a divisor again: no remainder loop
    o, u, v = r.do("split", suf[0], [None, m, vf])
    outer = [*loops[:-j], o]
    total = 1
    for lp in outer:
        total *= r.extent(lp)
    f = r.try_("fuse", *outer) if len(outer) > 1 else [o]
    if par and f and total * m * vf >= PAR_MIN_ELEMS and total >= 2:
        r.try_("parallel", f[0])
    if m > 1:
        r.try_("unroll", u)
    r.try_("vectorize", v)


def rows_trace(func, info: KernelInfo, lanes: int, inline_multi: bool, par: bool = True,
               rfactor: bool = False, acc_vectors: int = 1) -> list[dict[str, Any]] | None:
    """Row reductions (norms, softmax, means): one parallel row loop, every block computed under it.
    `rfactor`: each reduction over a row accumulates in a vector of `lanes` partial results (the row's
    loop split [k / lanes, lanes], the inner part rfactored into a spatial, vectorised axis, its init
    hoisted), then sums the lanes once: the reduction runs at vector width, not one scalar chain;
    `acc_vectors` such vectors side by side (independent accumulators hide the add's latency)."""
    r = Recorder(func)
    outs = [b for b in info.blocks if b.name in info.outputs] or [info.blocks[-1]]
    consumers: dict[str, int] = {}
    for b in info.blocks:
        for ld in b.loads:
            consumers[ld.buffer] = consumers.get(ld.buffer, 0) + 1
    keep = {b.name for b in outs}
    if not inline_multi:  # an expensive producer read twice (softmax's exp) is computed once
        keep |= {b.name for b in info.blocks if consumers.get(b.store.buffer, 0) > 1}
    left = _inline_around(r, info, keep)
    out = outs[-1].name
    ob = r.block(out)
    loops = r.loops(ob)
    # rows: the output loops that every reduction keeps spatial (all but the innermost)
    red_blocks = [n for n in left if info.block(n).is_reduction]
    n_rows = max(1, len(loops) - 1)
    row_loops = loops[:n_rows]
    row = r.try_("fuse", *row_loops) if len(row_loops) > 1 else [row_loops[0]]
    if not row:
        return None
    row = row[0]
    inner = r.loops(ob)[-1]
    for n in reversed([n for n in left if n != out]):
        if not r.try_("compute_at", r.block(n), row):
            return None
    # the work, not the output, decides the threads: 32 rows of 4096 are 131072 elements to reduce
    if par and max(b.volume for b in info.blocks) >= PAR_MIN_ELEMS and r.extent(row) >= 2:
        r.try_("parallel", row)
    for n in left:
        b = r.block(n)
        bl = r.loops(b)
        if info.block(n).is_reduction:
            if rfactor:
                _vector_accumulate(r, b, lanes * max(1, acc_vectors))
            continue
        if bl and r.extent(bl[-1]) > 1:
            r.try_("vectorize", bl[-1])
    if not red_blocks:
        r.try_("vectorize", inner)
    return r.steps


def _vector_accumulate(r: Recorder, b: str, lanes: int) -> None:
    """A row reduction's innermost loop split [ko, lanes] and rfactored on the lanes: the rf block keeps
    `lanes` partial results (its init hoisted out of ko, vectorised) and accumulates them at vector width."""
    bl = r.loops(b)
    if not bl:
        return
    n = r.extent(bl[-1])
    if n < 2 * lanes or n % lanes:
        return
    ko, ki = r.do("split", bl[-1], [None, lanes])
    # the lanes last in the rf buffer ([rows..., lanes]): a vector of partial results is contiguous
    n_sp = sum(1 for iv in r.sch.get(r.env[b]).iter_vars if int(iv.iter_type) == 0)
    rf = r.try_("rfactor", ki, n_sp)
    if not rf:
        return
    rl = r.loops(rf[0])
    # vectorised before the init is split off: the update block alone is no reduction block to TVM
    r.try_("vectorize", rl[-1])
    init = r.try_("decompose_reduction", rf[0], rl[-2])
    if init:
        r.try_("vectorize", r.loops(init[0])[-1])
    # the lanes' sum (the original block, now over ki): a short scalar loop per row


# vectors x producers inlined or not x threads for row reductions; nearest to the first guesses first
WIDE_INJ = ((2, True), (4, True), (8, True), (2, False), (4, False), (3, True), (6, True), (8, False))
WIDE_RED = ((2, False, True), (4, False, True), (1, True, True), (2, True, True), (1, False, False),
            (2, False, False), (4, True, True), (8, False, True))


def wide_memory_variants(func, info: KernelInfo, lanes: int) -> list[tuple[str, list[dict[str, Any]] | None]]:
    """A widened round's variants for element-wise and row-reduction kernels (GEMM-like: `wide_cpu_variants`)."""
    out: list[tuple[str, list[dict[str, Any]] | None]] = []
    if info.kind == "reduction":
        for m, inline_multi, par in WIDE_RED:
            out.append((f"rows: {m} accumulator vector(s) of {lanes}" + (", producers inlined" if inline_multi else "")
                        + ("" if par else ", no threads") + " (widened)",
                        _safe(rows_trace, func, info, lanes, inline_multi, par, True, m)))
    elif info.kind == "injective":
        for vm, par in WIDE_INJ:
            out.append((f"injective: {vm} vectors of {lanes} a step" + ("" if par else ", no threads") + " (widened)",
                        _safe(injective_trace, func, info, lanes, par, vm)))
    return out
