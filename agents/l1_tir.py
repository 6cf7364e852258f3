"""L1 rule agent: schedule traces (leka.sched DSL) for the hottest unscheduled PrimFuncs.

Rules by op pattern (agents.common.analyse):
- matmul / batch-matmul / conv / depthwise conv (a reduction whose body multiplies two loads):
  a register tile over two spatial axes (the contiguous output axis, vectorised by the target's
  lanes, times a second axis that indexes the other operand), the reduction loops between the outer
  tile loops and the register tile, the accumulator tile cached (cache_write + reverse_compute_at),
  epilogues inlined into the write-back, producers (padding) computed at the tile or inlined,
  outer loops fused and parallel, decompose_reduction last.
- row reductions / softmax / norms: producers inlined, every block computed at a fused, parallel row
  loop of the output block, spatial inner loops vectorised.
- injective: everything inlined into the output block, its loops fused, split by the lanes,
  outer parallel, inner vectorised.
CUDA: the same structure with blockIdx / threadIdx bindings instead of parallel / vectorise.
Every trace is replayed through `leka.ir.sched.apply_trace` before it is returned; illegal ones are
dropped, so the agent only ever proposes traces that apply.
"""

from __future__ import annotations

import random
from typing import Any

from agents.common import (
    KernelInfo,
    Recorder,
    _inline_around,
    _pick_axes,
    analyse,
    divisors,
    lowered_funcs,
    near_roof,
    rank_kernels,
    validate_trace,
    vector_factor,
)
from agents.l1_cuda import _safe, cuda_variants
from agents.l1_memory import _flat_parallel_vectorize, injective_trace, rows_trace, wide_memory_variants
from leka import tvm_adapter as A
from leka.backends import get_backend
from leka.core.protocols import AgentContext
from leka.core.types import Edit, edit_digest
from leka.ir.edits import target_for
from leka.ir.levels.l1 import trace_error

BATCH_MIN = 4  # unscheduled kernels (distinct structures) before a batched L1 edit is proposed

GEMM_KINDS = ("matmul", "batch_matmul", "conv", "depthwise_conv")


# ----------------------------------------------------------------------------- CPU rules
def gemm_trace(func, info: KernelInfo, lanes: int, rows: int, vec_mult: int, k_split: int = 0,
               pad_at: bool = True, tile_rows_of_output: bool = False) -> list[dict[str, Any]] | None:
    """Register-tiled, parallel, vectorised schedule of the main reduction block."""
    r = Recorder(func)
    main = info.block(info.main)  # type: ignore[arg-type]
    producers = [b.name for b in info.blocks if b.name != main.name and
                 any(ld.buffer == b.store.buffer for ld in main.loads)]
    # pads with a boundary test stay separate (computed at the tile); plain copies get inlined
    keep = {main.name} | {p for p in producers if pad_at and "if_then_else" in info.block(p).text}
    left = _inline_around(r, info, keep)
    if any(info.block(n).is_reduction for n in left if n != main.name):
        return None  # a second reduction: not a plain GEMM / conv kernel
    mb = r.block(main.name)
    loops = r.loops(mb)
    names = [v for v, _, _ in main.iters]
    if len(loops) != len(names):
        return None
    by_var = dict(zip(names, loops, strict=True))
    ext = {v: e for v, _, e in main.iters}
    vec, tile = _pick_axes(info)
    if tile_rows_of_output:  # depthwise: no operand is shared across channels; tile output rows
        order = [v for d in main.store.dims for v in d if v in ext and v != vec and ext[v] > 1]
        tile = order[-1] if order else None
    vf = vector_factor(ext[vec], lanes)
    if vf < 2:
        return None
    vm = vec_mult if ext[vec] % (vf * vec_mult) == 0 else 1
    v0, v1, v2 = r.do("split", by_var[vec], [None, vm, vf])
    u0 = u1 = None
    if tile is not None:
        uf = max((d for d in divisors(ext[tile]) if d <= rows), default=1)
        if uf > 1:
            u0, u1 = r.do("split", by_var[tile], [None, uf])
    red = [by_var[v] for v, k, _ in main.iters if k == "R"]
    k_inner: list[str] = []
    if k_split and red:
        kv = [v for v, k, _ in main.iters if k == "R"][0]
        if ext[kv] % k_split == 0 and ext[kv] > k_split:
            k0, k1 = r.do("split", red[0], [None, k_split])
            red = [k0] + red[1:]
            k_inner = [k1]
    outer = [by_var[v] for v, k, _ in main.iters if k == "S" and v not in (vec, tile)]
    outer_tile = outer + ([u0] if u0 else ([by_var[tile]] if tile else [])) + [v0]
    inner = ([u1] if u1 else []) + [v1, v2]
    r.do("reorder", outer_tile + red + k_inner + inner)
    _place_and_annotate(r, info, main, mb, left, producers, outer_tile, red, k_inner, (u1, v0, v1, v2))
    return r.steps


def _place_and_annotate(r: Recorder, info: KernelInfo, main, mb: str, left: list[str], producers: list[str],
                        outer_tile: list, red: list, k_inner: list, loops: tuple) -> None:
    """The second half of `gemm_trace`: accumulator in registers, epilogues and producers placed at
    the tile, then parallel / unroll / vectorise and the reduction's init split off."""
    u1, v0, v1, v2 = loops
    # the accumulator tile lives in a small buffer LLVM keeps in registers
    cw = r.try_("cache_write", mb, 0, "global")
    if cw:
        r.do("reverse_compute_at", cw[0], v0)
    _place_at_tile(r, info, main, left, producers, cw, v0)
    # parallel over the outer tile loops (fuse those with a single child)
    fused = r.try_("fuse", *outer_tile) if len(outer_tile) > 1 else [outer_tile[0]]
    par = fused[0] if fused else outer_tile[0]
    r.try_("parallel", par)
    if u1:
        r.try_("unroll", u1)
    r.try_("unroll", v1)
    for k in k_inner:
        r.try_("unroll", k)
    red_ext = [r.extent(x) for x in red]
    if len(red) >= 2 and red_ext[-1] * red_ext[-2] <= 9:  # a 3x3 window: unroll it
        r.try_("unroll", red[-1])
        r.try_("unroll", red[-2])
    r.do("vectorize", v2)
    # vectorise the write-back / epilogue / producer loops under the tile
    for b in [b.name for b in info.blocks if b.name != main.name]:
        if r.has_block(b):
            bl = r.loops(r.block(b))
            if bl and bl[-1] not in (par,):
                r.try_("vectorize", bl[-1])
    if cw and r.has_block(_cw_name(r, cw[0])):
        cl = r.loops(cw[0])
        r.try_("vectorize", cl[-1])
    first_red = red[0] if red else None
    if first_red:
        init = r.try_("decompose_reduction", mb, first_red)
        if init:
            il = r.loops(init[0])
            r.try_("vectorize", il[-1])


def _place_at_tile(r: Recorder, info: KernelInfo, main, left: list[str], producers: list[str], cw, v0) -> None:
    """Epilogues into the tile's write-back (or at the tile), producers computed at the tile."""
    epilogue = [n for n in left if n != main.name and n not in producers]
    readers: dict[str, int] = {}
    for b in info.blocks:
        for buf in {ld.buffer for ld in b.loads}:
            readers[buf] = readers.get(buf, 0) + 1
    if any(readers.get(info.block(n).store.buffer, 0) > 1 for n in epilogue):
        # an epilogue value read twice (SiLU: x * sigmoid(x)): reverse-inlining it into the write-back
        # drops its buffer while the second reader still loads it (TVM 0.27 builds that into "Buffer
        # T_add_intermediate is used before its definition", every conv tile of l2_conv3x3_s2_bn_silu);
        # so the intermediate epilogue blocks are inlined into their readers first, leaving the output
        # block, which then goes into the write-back
        for n in epilogue:
            if n not in info.outputs and r.try_("compute_inline", r.block(n)):
                continue
    for n in epilogue:
        if not r.has_block(n):
            continue
        blk = r.block(n)
        if cw and r.try_("reverse_compute_inline", blk):
            continue
        r.try_("reverse_compute_at", blk, v0)
    for p in producers:
        if r.has_block(p):
            pb = r.block(p)
            if not r.try_("compute_at", pb, v0):
                r.try_("compute_inline", pb)


def _cw_name(r: Recorder, handle: str) -> str:
    return str(r.sch.get(r.env[handle]).name_hint)


def cpu_variants(func, info: KernelInfo, lanes: int) -> list[tuple[str, list[dict[str, Any]] | None]]:
    out: list[tuple[str, list[dict[str, Any]] | None]] = []
    if info.kind in GEMM_KINDS:
        if info.kind == "depthwise_conv":
            grid = [(4, 1, 0, True), (2, 1, 0, True), (4, 1, 0, False), (1, 1, 0, True)]
        elif info.kind == "conv":
            grid = [(8, 1, 0, True), (4, 2, 0, True), (8, 1, 0, False), (16, 1, 0, True)]
        else:
            grid = [(8, 2, 4, True), (4, 4, 0, True), (16, 1, 4, True), (8, 1, 0, True)]
        for rows, vm, ks, pad_at in grid:
            tag = f"{info.kind}: register tile {rows}x{vm}x{lanes}" + (f", k/{ks} unrolled" if ks else "") + \
                  ("" if pad_at else ", pad inlined")
            out.append((tag, _safe(gemm_trace, func, info, lanes, rows, vm, ks, pad_at,
                                   info.kind == "depthwise_conv")))
        if not any(steps for _, steps in out):
            out.append((f"{info.kind}: flat parallel + vectorise (fallback)", _safe(generic_trace, func, info, lanes)))
    elif info.kind == "reduction":
        out.append(("rows: parallel rows, producers computed per row, vector accumulators (rfactor)",
                    _safe(rows_trace, func, info, lanes, False, True, True)))
        out.append(("rows: parallel rows, producers computed per row", _safe(rows_trace, func, info, lanes, False)))
        out.append(("rows: parallel rows, all producers inlined", _safe(rows_trace, func, info, lanes, True)))
        out.append(("rows: producers per row, vectorised, no threads", _safe(rows_trace, func, info, lanes, False, False)))
        out.append(("per-block parallel + vectorise", _safe(generic_trace, func, info, lanes)))
    else:
        out.append(("injective: inline, fuse, parallel outer, vectorise inner", _safe(injective_trace, func, info, lanes)))
        out.append(("injective: inline, fuse, vectorise (no threads)", _safe(injective_trace, func, info, lanes, False)))
        out.append(("injective: per-block parallel + vectorise", _safe(generic_trace, func, info, lanes)))
    return out


# what widened rounds add for memory-bound kernels (issue 44: a run stopped with "nothing left to expand"
# at 96 s of 120 on l1_gelu_tanh): vectors per step x threads for element-wise kernels, accumulator
# the register tiles a widened round adds (issue 30): every rows x vector-multiple x k-unroll of these not
# in the first grid, nearest to the first guesses first (rows, then the vector multiple)
WIDE_ROWS = (8, 4, 16, 2, 32)
WIDE_VM = (1, 2, 4)
WIDE_KS = (0, 4)


def wide_cpu_variants(func, info: KernelInfo, lanes: int) -> list[tuple[str, list[dict[str, Any]] | None]]:
    """What a widened round (run.widen_rounds) offers beyond `cpu_variants`: for GEMM-like kernels the
    rest of the register-tile grid; for element-wise and reduction kernels `wide_memory_variants`."""
    if info.kind not in GEMM_KINDS:
        return wide_memory_variants(func, info, lanes)
    out = []
    for rows in WIDE_ROWS:
        for vm in WIDE_VM:
            for ks in WIDE_KS:
                tag = f"{info.kind}: register tile {rows}x{vm}x{lanes}" + (f", k/{ks} unrolled" if ks else "") \
                      + " (widened)"
                out.append((tag, _safe(gemm_trace, func, info, lanes, rows, vm, ks, True,
                                       info.kind == "depthwise_conv")))
    return out


def generic_trace(func, info: KernelInfo, lanes: int) -> list[dict[str, Any]] | None:
    """Per block: spatial blocks fused/parallel/vectorised; reductions parallel over their rows."""
    r = Recorder(func)
    outs = set(info.outputs)
    left = _inline_around(r, info, outs, epilogue_ok=False)
    for n in left:
        b = r.block(n)
        bi = info.block(n)
        if not bi.is_reduction:
            _flat_parallel_vectorize(r, b, lanes)
            continue
        loops = r.loops(b)
        ns = len(bi.spatial)
        if len(loops) != len(bi.iters) or ns == 0:
            continue
        sp = loops[:ns]
        f = r.try_("fuse", *sp) if len(sp) > 1 else [sp[0]]
        if f:
            r.try_("parallel", f[0])
    return r.steps



class RuleL1Agent:
    level = "L1"
    widens = True  # a widened round (run.widen_rounds) gets more from it: leka.loop.nodes.select

    def __init__(self, backend: str = "llvm", max_kernels: int = 2, root_params=None):
        self.backend = backend
        self.max_kernels = max_kernels
        self.root_params = root_params
        # per (kernel hash, name, lanes, seed): the batch and the single edits ask for the same kernels
        self._variants_memo: dict[tuple, list[tuple[str, list[dict[str, Any]]]]] = {}
        self._compiling_memo: dict[tuple, list[dict[str, Any]] | None] = {}

    def _target(self, context: AgentContext):
        # a GPU target's spec takes no core count (target_spec ignores it)
        return A.make_target(self.backend, num_cores=context.num_cores or None)

    def raw_variants(self, func, info: KernelInfo, lanes: int,
                     wide: bool = False) -> list[tuple[str, list[dict[str, Any]] | None]]:
        # a GPU schedule binds its loops to blocks and threads (leka.backends: Backend.gpu)
        if get_backend(self.backend).gpu:
            return cuda_variants(func, info)
        return cpu_variants(func, info, lanes) + (wide_cpu_variants(func, info, lanes) if wide else [])

    def variants_for(self, func, name: str, lanes: int, seed: int = 0,
                     wide: bool = False) -> list[tuple[str, list[dict[str, Any]]]]:
        """Legal (rationale, trace) pairs for one unscheduled PrimFunc, best guess first; `wide`: the
        widened grid after them (a widened round)."""
        info = analyse(func, name)
        raw = self.raw_variants(func, info, lanes, wide)
        seen: set[str] = set()
        res = []
        for why, steps in raw:
            if not steps:
                continue
            key = repr(steps)
            if key in seen or validate_trace(func, steps) is not None:
                continue
            seen.add(key)
            res.append((why, steps))
        if seed and len(res) > 2:
            # ties beyond the first choice: a seed-dependent, reproducible order
            tail = res[1:]
            random.Random(seed).shuffle(tail)
            res = [res[0]] + tail
        return res

    def _variants(self, func, fkey: str, name: str, lanes: int, seed: int,
                  wide: bool = False) -> list[tuple[str, list[dict[str, Any]]]]:
        key = (fkey, name, lanes, seed, wide)
        if key not in self._variants_memo:
            self._variants_memo[key] = self.variants_for(func, name, lanes, seed, wide)
        return self._variants_memo[key]

    def _first_compiling(self, func, fkey: str, name: str, lanes: int, seed: int, target) -> list[dict[str, Any]] | None:
        """The first of the kernel's first two variants that a trace edit accepts (some legal traces do
        not compile: one such kernel would sink a whole batch)."""
        key = (fkey, name, lanes, seed)
        if key not in self._compiling_memo:
            self._compiling_memo[key] = next(
                (steps for _why, steps in self._variants(func, fkey, name, lanes, seed)[:2]
                 if trace_error(func, steps, target, name) is None), None)
        return self._compiling_memo[key]

    def _batch(self, funcs, keys: dict[str, str], ranked, scheduled: set[str], lanes: int, context: AgentContext,
               target) -> Edit | None:
        """One edit scheduling the hottest unscheduled kernels at once (each its first-choice variant,
        one per distinct structure: identical kernels share an L1 entry), when at least BATCH_MIN are
        unscheduled; None otherwise or once tried."""
        n = int(context.extra.get("l1_batch", 0) or 0)
        if n <= 0:
            return None
        traces: dict[str, list[dict[str, Any]]] = {}
        seen: set[str] = set()
        for name, _score in ranked:
            if len(traces) >= n:
                break
            if name in scheduled:
                continue
            if keys[name] in seen:
                continue
            steps = self._first_compiling(funcs[name], keys[name], name, lanes, context.seed, target)
            if steps is not None:
                seen.add(keys[name])
                traces[name] = steps
        if len(traces) < BATCH_MIN:
            return None
        e = Edit(level="L1", kind="traces", target=next(iter(traces)), payload={"traces": traces},
                 rationale=f"{len(traces)} hottest unscheduled kernels at once, each its first-choice "
                           f"schedule ({', '.join(list(traces)[:4])}{', ...' if len(traces) > 4 else ''})")
        return None if edit_digest(e) in context.tried else e

    def propose(self, candidate, context: AgentContext) -> list[Edit]:
        target = self._target(context)
        lanes = context.vector_lanes or A.vector_lanes_fp32(target)  # 4 on targets that are not LLVM CPUs
        funcs = lowered_funcs(candidate, target, self.root_params)
        keys = {n: A.structural_hash(f) for n, f in funcs.items()}
        scheduled = {n for n, k in keys.items() if k in candidate.l1}
        ranked = rank_kernels(funcs, context.profile, scheduled, near_roof=near_roof(context))
        edits: list[Edit] = []
        batch = self._batch(funcs, keys, ranked, scheduled, lanes, context, target_for(candidate))
        if batch is not None:
            edits.append(batch)
        per_kernel = max(1, context.variants)
        # a widened round (run.widen_rounds: every node had nothing left): kernels already scheduled get
        # their untried variants too, and GEMM-like ones the wider tile grid
        widen = int(context.extra.get("widen", 0) or 0)
        done = 0
        for name, score in ranked:
            if done >= self.max_kernels or (name in scheduled and not widen):
                break
            got = 0
            for why, steps in self._variants(funcs[name], keys[name], name, lanes, context.seed, widen > 0):
                e = Edit(level="L1", kind="trace", target=name, payload={"trace": steps},
                         rationale=f"{name} (score {score:.3g}): {why}")
                if edit_digest(e) in context.tried:
                    continue
                edits.append(e)
                got += 1
                if got >= per_kernel:
                    break
            if got:
                done += 1
        return edits
