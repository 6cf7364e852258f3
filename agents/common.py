"""Shared helpers of the rule-based agents: edit digests, PrimFunc analysis, kernel ranking and a
trace recorder that replays exactly through `leka.ir.sched.apply_trace`.

The analysis reads the PrimFunc through an `s_tir.Schedule` (via `leka.tvm_adapter`): block names,
iterator kinds and extents, the stored buffer and, per loaded buffer, which block iterators index
which dimension. That is enough to tell a GEMM from a conv from a row reduction, and which axis is
contiguous (the one to vectorise), without matching on the names legalization happens to use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from leka import tvm_adapter as A
from leka.core.config import NEAR_ROOF
from leka.ir import sched

_VAR = re.compile(r"\b(v_\w+|[a-zA-Z_]\w*)\b")


# ----------------------------------------------------------------------------- analysis
@dataclass
class Access:
    buffer: str
    dims: list[set[str]]  # per dimension: the block iterators its index uses


@dataclass
class BlockInfo:
    name: str
    iters: list[tuple[str, str, int]]  # (var, "S" | "R", extent)
    store: Access
    loads: list[Access]
    has_init: bool
    text: str  # the store's value, for op detection (exp, if_then_else, ...)
    loop_extents: list[int]

    @property
    def spatial(self) -> list[tuple[str, int]]:
        return [(v, e) for v, k, e in self.iters if k == "S"]

    @property
    def reduce(self) -> list[tuple[str, int]]:
        return [(v, e) for v, k, e in self.iters if k == "R"]

    @property
    def is_reduction(self) -> bool:
        return bool(self.reduce)

    @property
    def volume(self) -> int:
        n = 1
        for e in self.loop_extents:
            n *= e
        return n


@dataclass
class KernelInfo:
    """What a rule needs to know about one PrimFunc."""

    name: str
    kind: str  # matmul | batch_matmul | conv | depthwise_conv | reduction | injective
    blocks: list[BlockInfo]
    params: list[tuple[str, list[int], str]]  # (name, shape, dtype) in call order
    main: str | None  # the block that carries the work (None for injective)
    flops: float
    outputs: list[str] = field(default_factory=list)  # blocks writing a parameter buffer

    def block(self, name: str) -> BlockInfo:
        return next(b for b in self.blocks if b.name == name)


def _vars_in(expr_text: str, known: set[str]) -> set[str]:
    return {m for m in _VAR.findall(expr_text) if m in known}


def _loads(expr, known: set[str], out: list[Access]) -> None:
    """Collect buffer loads of a TIR expression (walks the generic a/b/args/value fields)."""
    if expr is None:
        return
    if hasattr(expr, "source") and hasattr(expr, "indices"):  # TensorLoad
        out.append(Access(str(expr.source.name), [_vars_in(str(i), known) for i in expr.indices]))
        for i in expr.indices:
            _loads(i, known, out)
        return
    for attr in ("a", "b", "value", "condition", "true_value", "false_value"):
        if hasattr(expr, attr):
            _loads(getattr(expr, attr), known, out)
    if hasattr(expr, "args"):
        for a in expr.args:
            _loads(a, known, out)


def block_infos(sch) -> list[BlockInfo]:
    root = sch.get_sblock("root")
    res = []
    for b in sch.get_child_blocks(root):
        blk = sch.get(b)
        iters = [(str(iv.var.name), "R" if int(iv.iter_type) == 2 else "S", int(iv.dom.extent))
                 for iv in blk.iter_vars]
        known = {v for v, _, _ in iters}
        body = blk.body
        if not (hasattr(body, "buffer") and hasattr(body, "indices")):
            store = Access("?", [])
            loads: list[Access] = []
            text = str(body)
        else:
            store = Access(str(body.buffer.name), [_vars_in(str(i), known) for i in body.indices])
            loads = []
            _loads(body.value, known, loads)
            loads = [ld for ld in loads if ld.buffer != store.buffer]
            text = str(body.value)
        try:
            extents = [int(sch.get(lp).extent) for lp in sch.get_loops(b)]
        except (TypeError, ValueError):  # symbolic extents: treat as unknown-large
            extents = [1 << 20]
        res.append(BlockInfo(str(blk.name_hint), iters, store, loads, blk.init is not None, text, extents))
    return res


def _classify_main(b: BlockInfo) -> str:
    """The schedule template for a kernel's main reduction block. Not the kernel classifier
    (`leka.ir.classify`, what profiles report): a pooling window is scheduled like a conv and a
    grouped conv like a depthwise one, and matmuls split into batched or not."""
    red = {v for v, _ in b.reduce}
    # a dimension indexed by a spatial and a reduction iterator together: a sliding window (conv)
    window = any(d & red and d - red for ld in b.loads for d in ld.dims)
    muls = [ld for ld in b.loads if any(d & red for d in ld.dims)]
    if window:
        out_dims = [d for d in b.store.dims if d]
        # depthwise: the channel of the input window is the output channel (v_ff + v_rc, rc extent 1)
        red_ext = dict(b.reduce)
        dw = any(len(d) >= 2 and (d & red) and all(red_ext[r] == 1 for r in d & red) and (d - red) & set().union(*out_dims)
                 for ld in b.loads for d in ld.dims[:2] if ld.dims) if out_dims else False
        return "depthwise_conv" if dw or "group" in b.name or "depth" in b.name else "conv"
    if len(muls) >= 2 and "*" in b.text:
        n_sp = sum(1 for _, e in b.spatial if e > 1)
        return "batch_matmul" if n_sp >= 3 else "matmul"
    return "reduction"


def analyse(func, name: str = "") -> KernelInfo:
    sch = A.schedule(func)
    blocks = block_infos(sch)
    params = []
    for p in func.params:
        shape = [int(s) for s in p.shape] if hasattr(p, "shape") else []
        params.append((str(p.name), shape, str(getattr(p, "dtype", ""))))
    pnames = {p[0] for p in params}
    outputs = [b.name for b in blocks if b.store.buffer in pnames]
    flops = 0.0
    for b in blocks:
        flops += b.volume * (2 if b.is_reduction and "*" in b.text else 1)
    reds = [b for b in blocks if b.is_reduction]
    if not reds:
        return KernelInfo(name, "injective", blocks, params, None, flops, outputs)
    main = max(reds, key=lambda b: b.volume)
    kind = _classify_main(main)
    return KernelInfo(name, kind, blocks, params, main.name, flops, outputs)


def near_roof(context) -> float:
    """The run's near-roof fraction (AgentContext.extra, from config router.near_roof)."""
    extra = getattr(context, "extra", None) or {}
    return float(extra.get("near_roof", NEAR_ROOF))


def rank_kernels(funcs: dict[str, Any], profile: dict[str, Any] | None = None,
                 scheduled: set[str] | None = None, near_roof: float = NEAR_ROOF) -> list[tuple[str, float]]:
    """Where an edit pays most first: with a profile, by time share x distance from the measured roof
    (share x (1 - roof fraction)); kernels at or above `near_roof` of their roof are left out (no
    more evaluations go to them). Without a profile, by estimated FLOPs. Kernels already scheduled
    (names in `scheduled`, or profile rows with scheduled=True) go last."""
    scheduled = set(scheduled or ())
    scores: dict[str, float] = {}
    at_roof: set[str] = set()
    if profile and profile.get("kernels"):
        for row in profile["kernels"]:
            n = row.get("name")
            if n in funcs:
                share = float(row.get("share") or row.get("seconds") or 0.0)
                frac = row.get("roof_fraction")
                if frac is not None and float(frac) >= near_roof:
                    at_roof.add(n)
                    continue
                gap = 1.0 - min(1.0, max(0.0, float(frac))) if frac is not None else 1.0
                # a kernel with no time of its own keeps its share's order among its peers
                scores[n] = share * gap if share * gap > 0 else share * 1e-6
                if row.get("scheduled"):
                    scheduled.add(n)
    for n, f in funcs.items():
        if n not in scores and n not in at_roof:
            try:
                scores[n] = analyse(f, n).flops * (1e-12 if profile and profile.get("kernels") else 1.0)
            except Exception:  # noqa: BLE001 - an unanalysable kernel is ranked last, not fatal
                scores[n] = 0.0
    order = sorted(scores, key=lambda n: (n in scheduled, -scores[n], n))
    return [(n, scores[n]) for n in order]


# ----------------------------------------------------------------------------- trace recording
class Recorder:
    """Runs schedule primitives on a live schedule and records them as leka.sched steps.

    `try_(...)` applies a step on a copy first, so an illegal step is skipped and the trace stays
    replayable; handles are named l0, l1, ... / b0, b1, ... in the recorded trace."""

    def __init__(self, func):
        self.func = func
        self.sch = A.schedule(func)
        self.steps: list[dict[str, Any]] = []
        self.env: dict[str, Any] = {}
        self._n = 0

    def _fresh(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def _resolve(self, v: Any) -> Any:
        if isinstance(v, str) and v in self.env:
            return self.env[v]
        if isinstance(v, list):
            return [self._resolve(x) for x in v]
        return v

    def _run(self, sch, prim: str, args: list, kwargs: dict):
        a = [self._resolve(x) for x in args]
        kw = {k: self._resolve(v) for k, v in kwargs.items()}
        if prim == "reorder" and len(a) == 1 and isinstance(a[0], list):
            a = a[0]
        return getattr(sch, prim)(*a, **kw)

    def do(self, prim: str, *args: Any, out: str | None = None, **kwargs: Any):
        """Apply a step (raises on an illegal one). Returns the output names (list) or None."""
        if prim not in sched.PRIMITIVES:
            raise ValueError(f"primitive {prim} is not in the trace DSL")
        res = self._run(self.sch, prim, list(args), kwargs)
        return self._record(prim, list(args), kwargs, res, out)

    def try_(self, prim: str, *args: Any, out: str | None = None, **kwargs: Any):
        """Like `do`, but an illegal step leaves the schedule untouched and returns False."""
        trial = self.sch.copy()
        try:
            res = self._run(trial, prim, list(args), kwargs)
        except Exception:  # noqa: BLE001 - illegal here: the rule skips this step
            return False
        self.sch = trial
        names = self._record(prim, list(args), kwargs, res, out)
        return names if names is not None else True

    def _record(self, prim, args, kwargs, res, out):
        step: dict[str, Any] = {"prim": prim, "args": args}
        if kwargs:
            step["kwargs"] = kwargs
        names = None
        if res is not None and prim not in ("parallel", "vectorize", "unroll", "bind", "reorder",
                                             "compute_at", "reverse_compute_at", "compute_inline",
                                             "reverse_compute_inline", "annotate", "storage_align",
                                             "set_scope"):
            vals = list(res) if isinstance(res, (list, tuple)) or type(res).__name__ == "Array" else [res]
            prefix = out or ("b" if prim in ("get_sblock", "cache_write", "cache_read", "rfactor",
                                             "decompose_reduction", "blockize") else "l")
            names = [self._fresh(prefix) for _ in vals]
            step["out"] = names
            self.env.update(zip(names, vals, strict=True))
        self.steps.append(step)
        return names

    # convenience
    def block(self, name: str) -> str:
        return self.do("get_sblock", name, out="b")[0]

    def loops(self, block: str) -> list[str]:
        return self.do("get_loops", block, out="l") or []

    def extent(self, loop: str) -> int:
        try:
            return int(self.sch.get(self.env[loop]).extent)
        except (TypeError, ValueError):
            return 1 << 20

    def has_block(self, name: str) -> bool:
        try:
            self.sch.get_sblock(name)
            return True
        except Exception:  # noqa: BLE001
            return False

    def result(self):
        return self.sch.mod["main"]


def validate_trace(func, steps: list[dict[str, Any]]) -> str | None:
    """None if the trace replays through the real DSL, else the error message."""
    try:
        sched.apply_trace(func, steps)
        return None
    except sched.TraceError as e:
        return str(e)
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def vector_factor(extent: int, lanes: int) -> int:
    """The vector width for an axis: the lanes if they divide it, else its largest divisor below the
    lanes (measured: a 28-wide vector on 16 lanes spills and runs ~30x slower than 14-wide)."""
    if extent % lanes == 0:
        return lanes
    return max((d for d in divisors(extent) if d <= lanes), default=1)


def lowered_funcs(candidate, target, root_params=None) -> dict[str, Any]:
    """The candidate's lowered PrimFuncs *before* its L1 entries are applied: L1 edits are keyed by
    the hash of the unscheduled PrimFunc, so that is what a rule must schedule."""
    from leka import ir

    # before DLight on GPUs: a thread-bound PrimFunc can be neither re-scheduled nor keyed. The
    # lowering cache's module: the edit that made this candidate and its views lowered it already
    return A.prim_funcs(ir.unscheduled_module(candidate, target, root_params))


# ----------------------------------------------------------------------------- shared by the L1 rules
def _inline_around(r: Recorder, info: KernelInfo, keep: set[str], epilogue_ok: bool = True) -> list[str]:
    """Inline spatial producers / consumers that are not in `keep`; returns the blocks left."""
    left = []
    big = max(b.volume for b in info.blocks)
    for b in info.blocks:
        # small broadcast precomputations (BN's per-channel sqrt/divide) stay separate: inlined,
        # they would be recomputed for every element they broadcast to
        if b.name in keep or b.is_reduction or b.volume * 4 < big:
            left.append(b.name)
            continue
        blk = r.block(b.name)
        if r.try_("compute_inline", blk):
            continue
        if epilogue_ok and r.try_("reverse_compute_inline", blk):
            continue
        left.append(b.name)
    return left


def contiguous_suffix(r: Recorder, block: str) -> int:
    """How many of a spatial block's innermost loops may be fused into one vectorised loop: the longest
    suffix of its iterators that every buffer it reads or writes either indexes exactly, in its own last
    dimensions and in order (contiguous), or does not use at all (a broadcast value, the same for the
    whole vector). 0 where the block's loops are not its iterators one to one, or the innermost one
    already fails (a transpose)."""
    blk = r.sch.get(r.env[block])
    ivs = [str(iv.var.name) for iv in blk.iter_vars]
    if len(r.sch.get_loops(r.env[block])) != len(ivs) or any(int(iv.iter_type) != 0 for iv in blk.iter_vars):
        return 0
    known = set(ivs)
    regions = [[(str(rg.min), _vars_in(str(rg.min), known)) for rg in br.region] for br in [*blk.reads, *blk.writes]]
    for j in range(len(ivs), 0, -1):
        suffix = ivs[-j:]
        if all(_reads_suffix(dims, suffix) for dims in regions):
            return j
    return 0


def _reads_suffix(dims: list[tuple[str, set[str]]], suffix: list[str]) -> bool:
    used = set().union(*(v for _, v in dims)) if dims else set()
    if not used & set(suffix):
        return True  # invariant over the suffix: a broadcast
    if len(dims) < len(suffix):
        return False
    tail, head = dims[len(dims) - len(suffix):], dims[:len(dims) - len(suffix)]
    if any(v & set(suffix) for _, v in head):
        return False
    return all(text.strip() == var for (text, _), var in zip(tail, suffix, strict=True))


def _pick_axes(info: KernelInfo) -> tuple[str, str | None]:
    """(vector axis, register-tile axis) of the main block, as iterator names."""
    main = info.block(info.main)  # type: ignore[arg-type]
    spatial = [v for v, e in main.spatial]
    ext = dict(main.spatial)
    # vector axis: the innermost output dimension's iterator (contiguous in the output)
    vec = None
    for d in reversed(main.store.dims):
        cand = [v for v in d if v in ext and ext[v] > 1]
        if cand:
            vec = cand[0]
            break
    if vec is None:
        vec = spatial[-1]
    # tile axis: a spatial iterator of the operand that does not move with the vector axis,
    # so one broadcast load of it feeds a whole vector
    others = [ld for ld in main.loads if not any(vec in d for d in ld.dims)]
    order = {v: i for i, d in enumerate(main.store.dims) for v in d}
    cands: list[str] = []
    for ld in others:
        for d in ld.dims:
            cands += [v for v in d if v in ext and v != vec and ext[v] > 1]
    if not cands:
        cands = [v for v in spatial if v != vec and ext[v] > 1]
    tile = max(cands, key=lambda v: (order.get(v, -1), ext[v])) if cands else None
    return vec, tile
