"""Lowering and build: the zero pipeline, DLight on GPUs, PrimFunc surgery, compile and export."""

from __future__ import annotations

import os
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import tvm
import tvm_ffi
from tvm import relax, s_tir

from leka.tvm_adapter import const_eval
from leka.tvm_adapter.importer import PARSE_LOCK, guarded_from_source
from leka.tvm_adapter.targets import is_gpu


def lower(mod: tvm.IRModule, target: tvm.target.Target, gpu_schedule: bool = True) -> tvm.IRModule:
    """Legalize + fold + fuse (the "zero" pipeline), plus DLight default schedules on GPUs.
    `tvm.compile` alone only legalizes on CPU, leaving every op a separate unfused kernel.
    `gpu_schedule=False` stops before DLight, so L1 entries can be applied first (they are keyed by
    the unscheduled PrimFunc) and marked scheduled; `gpu_default_schedule` then does the rest."""
    def zero(m: tvm.IRModule) -> tvm.IRModule:
        with target:
            if custom := CUSTOM_LEGALIZE.get(target.kind.name):  # the zero pipeline legalizes first anyway
                m = relax.transform.LegalizeOps(customize_legalize_map=custom)(m)
            return relax.get_pipeline("zero")(m)

    with PARSE_LOCK, target:
        out = const_eval.run_pipeline(zero, mod)  # a candidate's PrimFuncs are evaluated only confined
        out = short_kernel_names(out, KERNEL_NAME_LIMIT.get(target.kind.name))
        if gpu_schedule and is_gpu(target):
            out = gpu_default_schedule(out)
    return out


def _cumsum_by_reduction(bb, call):
    """cumsum as a masked reduction (out[.., j, ..] = sum over k <= j), which DLight schedules like any
    reduction. TVM's GPU scan (DispatchSortScan -> gpu_2d_continuous_cumsum) updates shared memory in
    place across threads with no barrier between read and write: right where a warp runs in lockstep
    (NVIDIA), wrong on PoCL (l1_cumsum: rows right for 8 elements, then off by up to 2.9e3) and on any
    device whose work-items do not. Quadratic in the scanned length: slow for long scans, never wrong."""
    from tvm import te

    x, axis, exclusive = call.args[0], call.attrs.axis, bool(call.attrs.exclusive)
    dtype = str(call.attrs.dtype) if call.attrs.dtype is not None and str(call.attrs.dtype) else None

    def compute(a):
        if axis is None:
            from tvm import topi

            a = topi.reshape(a, (-1,))
        ax = 0 if axis is None else int(axis) % len(a.shape)
        k = te.reduce_axis((0, a.shape[ax]), name="k")

        def body(*idx):
            src = list(idx)
            src[ax] = k
            v = a[tuple(src)] if dtype is None else a[tuple(src)].astype(dtype)
            keep = (k < idx[ax]) if exclusive else (k <= idx[ax])
            # a select, not te.sum's `where=`: this TVM drops that predicate when it makes the PrimFunc
            return te.sum(tvm.tirx.Select(keep, v, tvm.tirx.const(0, v.dtype)), axis=k)

        return te.compute(a.shape, body, name="cumsum")

    return bb.call_te(compute, x, primfunc_name_hint="cumsum")


def _adaptive_avg_pool2d_one_block(bb, call):
    """adaptive_avg_pool2d (NCHW, windows of unequal size) as one reduction over the widest window, each element scaled by its
    window's size inside the sum. TVM's legalization sums into a global buffer, then divides; DLight
    leaves that buffer global, and the OpenCL host code's workspace free for it crashed the process
    (TVMBackendFreeWorkspace -> MemoryManager::GetAllocator, l3_fast_scnn's 3x3 and 6x6 pyramid pools)."""
    from tvm import te
    from tvm.relax.transform.legalize_ops.nn import _nn_adaptive_avg_pool2d

    x, attrs = call.args[0], call.attrs
    dims = list(x.ty.shape)
    sizes = list(attrs.output_size) if attrs.output_size is not None else dims[2:]
    if (len(dims) != 4 or str(attrs.layout) != "NCHW" or str(attrs.out_layout) != "NCHW"
            or not all(isinstance(d, (int, tvm.tirx.IntImm)) for d in dims + sizes)):
        return _nn_adaptive_avg_pool2d(bb, call)  # symbolic or other layouts: TVM's own
    shape = [int(d) for d in dims]
    h, w = shape[2:]
    oh, ow = (int(v) for v in sizes)
    if h % oh == 0 and w % ow == 0:  # equal windows: TVM's own lowering keeps no global buffer there
        return _nn_adaptive_avg_pool2d(bb, call)
    kh = max(-(-(i + 1) * h // oh) - i * h // oh for i in range(oh))
    kw = max(-(-(j + 1) * w // ow) - j * w // ow for j in range(ow))

    def compute(a):
        rh, rw = te.reduce_axis((0, kh), name="rh"), te.reduce_axis((0, kw), name="rw")

        def body(n, c, i, j):
            sh, eh = (i * h) // oh, ((i + 1) * h + oh - 1) // oh
            sw, ew = (j * w) // ow, ((j + 1) * w + ow - 1) // ow
            inside = tvm.tirx.all(sh + rh < eh, sw + rw < ew)
            area = ((eh - sh) * (ew - sw)).astype(a.dtype)
            v = a[n, c, tvm.tirx.min(sh + rh, h - 1), tvm.tirx.min(sw + rw, w - 1)] / area
            return te.sum(tvm.tirx.if_then_else(inside, v, tvm.tirx.const(0, a.dtype)), axis=[rh, rw])

        return te.compute((shape[0], shape[1], oh, ow), body, name="adaptive_pool_avg")

    return bb.call_te(compute, x, primfunc_name_hint="adaptive_avg_pool2d")


# target kind -> op -> legalization, where TVM's own lowering for that kind is wrong
# (the H100 crashed in the same place on l1_adaptive_avgpool_uneven's unequal windows)
CUSTOM_LEGALIZE = {"opencl": {"relax.cumsum": _cumsum_by_reduction,
                              "relax.nn.adaptive_avg_pool2d": _adaptive_avg_pool2d_one_block},
                   "cuda": {"relax.nn.adaptive_avg_pool2d": _adaptive_avg_pool2d_one_block}}


# FuseOps names a fused kernel after every op in it (571 characters for l1_quat_to_rotmat). PoCL keeps
# each kernel's binary under a path made from its name and aborts the whole process (an assert in
# pocl_cache.c) when that path passes its buffer; other OpenCL drivers have limits of their own.
KERNEL_NAME_LIMIT = {"opencl": 64}


def short_kernel_names(mod: tvm.IRModule, limit: int | None) -> tvm.IRModule:
    """Every PrimFunc named longer than `limit` renamed to its first characters and a hash of the full
    name (stable across runs, so L1 entries and profiles keyed by name still match), the Relax
    functions' calls rewritten; the module as it was when none is that long."""
    import hashlib

    from tvm.relax.expr_functor import PyExprMutator, mutator

    long = [gv for gv, f in mod.functions_items()
            if limit and isinstance(f, tvm.tirx.PrimFunc) and len(gv.name_hint) > limit]
    if not long:
        return mod
    bb = relax.BlockBuilder(mod)
    new = {}
    for gv in long:
        name = f"{gv.name_hint[:limit - 11]}_{hashlib.sha1(gv.name_hint.encode()).hexdigest()[:10]}"
        new[gv] = bb.add_func(mod[gv].with_attr("global_symbol", name), name)

    @mutator
    class Rename(PyExprMutator):
        def visit_global_var_(self, op):
            return new.get(op, op)

    for gv, f in mod.functions_items():
        if isinstance(f, relax.Function):
            bb.update_func(gv, Rename(bb.get()).visit_expr(f))
    out = bb.get()
    return tvm.IRModule({gv: f for gv, f in out.functions_items() if gv not in new}, attrs=out.attrs)


# TVM 0.27's legalization of R.full / R.full_like hands topi.full a PrimType where it tests
# `"float" in dtype` for a non-finite fill ("argument of type 'PrimType' is not iterable"): every
# torch.full(..., float("-inf")) mask failed in LegalizeOps and FoldConstant. The registry takes a
# higher-level registration; ours passes the dtype as a string there and defers to TVM's otherwise.
_TVM_FULL = {name: tvm.ir.Op.get(name).get_attr("FLegalize") for name in ("relax.full", "relax.full_like")}


def _legalize_full(bb, call):
    import math

    from tvm import topi
    from tvm.relax.transform.legalize_ops.common import _try_convert_to_scalar_const

    fill = _try_convert_to_scalar_const(call.args[1], python_native=True)
    shape = call.args[0].ty.shape if call.op.name == "relax.full_like" else call.args[0]
    if not (isinstance(fill, float) and not math.isfinite(fill) and isinstance(shape, relax.ShapeExpr)):
        return _TVM_FULL[call.op.name](bb, call)
    dtype = call.ty.dtype
    return bb.call_te(topi.full, shape.values, str(getattr(dtype, "dtype", dtype)), fill, primfunc_name_hint="full")


for _name in _TVM_FULL:
    tvm.ir.register_op_attr(_name, "FLegalize", _legalize_full, level=11)


def gpu_default_schedule(mod: tvm.IRModule, target: tvm.target.Target | None = None) -> tvm.IRModule:
    from tvm.s_tir import dlight as dl

    if target is not None:
        with target:
            return gpu_default_schedule(mod)
    # ApplyDefaultSchedule assigns into the module it is given: work on a copy, so a cached
    # unscheduled module (leka.ir) stays unscheduled
    mod = tvm.IRModule(dict(mod.functions), attrs=mod.attrs)
    rules = (dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(), dl.gpu.GeneralReduction(), dl.gpu.Fallback())
    return dl.ApplyDefaultSchedule(*(_next_rule_on_error(r) for r in rules))(mod)


def _next_rule_on_error(rule):
    """A DLight rule that raises on a kernel it mis-analyses (GEMV's `assert r_loops` on a fused
    conv + reparameterised branch, l2_mobileone_block) aborts the whole module's lowering in TVM's
    ApplyDefaultSchedule; here it declines instead and the next rule (at the end Fallback) schedules
    that kernel. Rules build their own Schedule from the function, so a failed try changes nothing."""
    from tvm.s_tir import dlight as dl

    class NextOnError(dl.ScheduleRule):
        def apply(self, func, target, tunable):
            try:
                return rule.apply(func, target, tunable)
            except Exception:  # noqa: BLE001 - any failure of this rule: the next one is tried
                return None

        def __repr__(self) -> str:
            return f"NextOnError({type(rule).__name__})"

    return NextOnError()


def build(mod: tvm.IRModule, target: tvm.target.Target):
    if target.kind.name == "opencl":
        _opencl_if_built()
    if target.kind.name == "cuda":
        from leka.tvm_adapter.runtime import cuda_runtime_setup

        cuda_runtime_setup()  # nvcc (or NVRTC) compiles TVM's CUDA C in this process
    # in the target's scope: TVM's CUDA compile callback takes the arch from Target.current(), and
    # without one it asks the GPU, which initialises CUDA in a judge that forks device workers after
    with target, const_eval.no_evaluation():
        return tvm.compile(mod, target)


def _opencl_if_built() -> None:
    """An OpenCL module built while no OpenCL runtime is registered becomes a fallback module that
    can be exported (for a board) but never run here: load the plugin first when it exists."""
    from leka.tvm_adapter import opencl_plugin

    if opencl_plugin.plugin_path().is_file():
        opencl_plugin.load_plugin()


# TVM 0.27 logs one "Warning: Scope Saving:" line per kernel from C++ when a VM executable is
# exported: hundreds of lines of noise at Level 3 that say nothing a user can act on
_EXPORT_NOISE = "Warning: Scope Saving"


def export_library(ex, path: str, options: Sequence[str] = (), cross_compiler: str = "") -> None:
    """`cross_compiler` (e.g. aarch64-linux-gnu-g++) links a library for a board's host CPU."""
    kw: dict = {}
    if options:
        kw["options"] = list(options)
    if cross_compiler:
        from tvm.support import cc  # tvm.contrib.cc before 0.27

        kw["fcompile"] = cc.cross_compiler(cross_compiler)
    sys.stderr.flush()
    with tempfile.TemporaryFile(mode="w+b") as cap:
        saved = os.dup(2)
        os.dup2(cap.fileno(), 2)
        try:
            ex.export_library(path, **kw)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            cap.seek(0)
            # everything else the export said (a linker error, say) still reaches stderr
            kept = [ln for ln in cap.read().decode(errors="replace").splitlines(keepends=True)
                    if _EXPORT_NOISE not in ln]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()


def load_module(path: str):
    return tvm.runtime.load_module(path)


def prim_funcs(mod: tvm.IRModule) -> dict[str, tvm.tirx.PrimFunc]:
    return {gv.name_hint: f for gv, f in mod.functions.items() if isinstance(f, tvm.tirx.PrimFunc)}


def structural_hash(obj) -> str:
    # strip the symbol name so two identical kernels under different names hash alike
    if isinstance(obj, tvm.tirx.PrimFunc):
        obj = obj.without_attr("global_symbol")
    return f"{tvm_ffi.structural_hash(obj) & 0xFFFFFFFFFFFFFFFF:016x}"


def structural_equal(a, b) -> bool:
    return bool(tvm_ffi.structural_equal(a, b))


def tir_equivalent(a: tvm.tirx.PrimFunc, b: tvm.tirx.PrimFunc) -> bool:
    """Structurally equal (symbol names aside), or equal once blocks are lowered to plain loops.
    TVMScript's TIR printer drops some block metadata that a re-parse cannot restore (the dtype of a
    unit region extent next to an int32 index, an unsimplified block iter domain): the text an agent
    reads then stands for the same loops and stores, not for the same block annotations."""
    a, b = a.without_attr("global_symbol"), b.without_attr("global_symbol")
    if tvm_ffi.structural_equal(a, b):
        return True
    seq = tvm.transform.Sequential([s_tir.transform.LowerInitBlock(), s_tir.transform.ConvertBlocksToOpaque(),
                                    s_tir.transform.LowerOpaqueBlock(), tvm.tirx.transform.StmtSimplify()])
    return bool(tvm_ffi.structural_equal(seq(tvm.IRModule({"main": a}))["main"], seq(tvm.IRModule({"main": b}))["main"]))


def replace_prim_func(mod: tvm.IRModule, name: str, func: tvm.tirx.PrimFunc) -> tvm.IRModule:
    out = tvm.IRModule(dict(mod.functions), attrs=mod.attrs)
    gv = out.get_global_var(name)
    func = func.with_attr("global_symbol", name)
    for k, v in mod[gv].attrs.items() if mod[gv].attrs is not None else []:
        if k != "global_symbol":
            func = func.with_attr(k, v)
    out[gv] = func
    return out


def schedule(func: tvm.tirx.PrimFunc):
    return s_tir.Schedule(func)


# Added for the three-layer candidate IR: L0 passes, L1 helpers, L2 source overrides, RPC.
def mark_scheduled(func: tvm.tirx.PrimFunc) -> tvm.tirx.PrimFunc:
    """DLight skips PrimFuncs with this attribute (s_tir/dlight/base/transform.py `_is_scheduled`)."""
    return func.with_attr("tirx.is_scheduled", True)


def is_scheduled(func: tvm.tirx.PrimFunc) -> bool:
    return bool(func.attrs is not None and "tirx.is_scheduled" in func.attrs
                and int(func.attrs["tirx.is_scheduled"]) == 1)


def relax_functions(mod: tvm.IRModule) -> dict[str, Any]:
    return {gv.name_hint: f for gv, f in mod.functions.items() if isinstance(f, relax.Function)}


def count_relax_ops(mod: tvm.IRModule) -> dict[str, int]:
    """Op name -> number of calls in the Relax functions (call_tir counts under its callee name)."""
    counts: dict[str, int] = defaultdict(int)

    def visit(e):
        if isinstance(e, relax.Call):
            op = e.op
            if isinstance(op, tvm.ir.Op):
                counts[op.name] += 1
            elif hasattr(op, "name_hint"):
                counts[op.name_hint] += 1

    for f in relax_functions(mod).values():
        relax.analysis.post_order_visit(f, visit)
    return dict(counts)


def tir_call_counts(mod: tvm.IRModule) -> dict[str, int]:
    """PrimFunc name -> calls per run of the Relax functions (call_tir and its variants name the callee
    in their first argument, a direct call in the op): a fused kernel used by several layers counts
    once per layer."""
    prims = set(prim_funcs(mod))
    counts: dict[str, int] = defaultdict(int)

    def visit(e):
        if isinstance(e, relax.Call):
            for a in (e.op, *e.args[:1]):
                if isinstance(a, tvm.ir.GlobalVar) and a.name_hint in prims:
                    counts[a.name_hint] += 1

    for f in relax_functions(mod).values():
        relax.analysis.post_order_visit(f, visit)
    return dict(counts)


def buffer_signature(func: tvm.tirx.PrimFunc) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, static shape, dtype) of each buffer parameter, in order (inputs then outputs)."""
    out = []
    for p in func.params:
        buf = p if hasattr(p, "shape") else func.buffer_map[p]
        out.append((str(buf.name), tuple(int(s) for s in buf.shape), str(buf.dtype)))
    return out


def extern_prim_func(func: tvm.tirx.PrimFunc, entry: str) -> tvm.tirx.PrimFunc:
    """The same signature as `func`, whose body calls the C symbol `entry` with each buffer's data
    pointer in order and asserts it returned 0 (recipe s5b_call_extern.py)."""
    sig = buffer_signature(func)
    params = ", ".join(f"p{i}: T.Buffer({shape!r}, {dt!r})" for i, (_, shape, dt) in enumerate(sig))
    ptrs = ", ".join(f"p{i}.data" for i in range(len(sig)))
    text = (
        "# from tvm.script import tirx as T\n\n"
        "@T.prim_func(private=True)\n"
        f"def main({params}):\n"
        '    T.func_attr({"tirx.noalias": True})\n'
        f'    assert T.call_extern("int32", "{entry}", {ptrs}) == 0, "L2 kernel {entry} returned non-zero"\n'
    )
    with PARSE_LOCK:
        return guarded_from_source(text)  # our own text, but one parse path is simpler to audit


def build_prim_func(func: tvm.tirx.PrimFunc, target: tvm.target.Target, name: str = "main"):
    """Compile one PrimFunc alone (a legality check for L1 edits; the source of one kernel)."""
    f = func.with_attr("global_symbol", name)
    with target:  # the arch from the target, never from the GPU (see `build`)
        return tvm.compile(tvm.IRModule({name: f}), target=target)


def llvm_ir_to_object(ll_path: str, obj_path: str) -> None:
    """LLVM IR text -> object file through TVM's bundled LLVM (no clang needed)."""
    m = tvm.runtime.load_module(ll_path)
    m.write_to_file(obj_path) if hasattr(m, "write_to_file") else m.save(obj_path)


def unwrap_single_output(mod: tvm.IRModule, func: str = "main") -> tvm.IRModule:
    """main returning a 1-tuple -> returning the tensor: RPC cannot index a remote tuple."""
    f = mod[func]
    ret = f.ret_ty
    if not (isinstance(ret, relax.TupleType) and len(ret.fields) == 1):
        return mod
    params = list(f.params)
    new_body = relax.SeqExpr(f.body.blocks, relax.TupleGetItem(f.body.body, 0))
    nf = relax.Function(params, new_body, ret.fields[0], f.is_pure, attrs=f.attrs)
    out_mod = tvm.IRModule(dict(mod.functions), attrs=mod.attrs)
    out_mod[mod.get_global_var(func)] = nf
    return out_mod
