"""The one module that imports `tvm`.

TVM renames things between releases (tir -> tirx, nd -> runtime.tensor, profile=True removed in
0.27); keeping every call here means the next rename costs one file. Recipes this follows are in
the shared `tvm-recipes/` folder (verified on TVM 0.27.0.post1 + apache-tvm-ffi 0.1.14.post1).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
import tvm
import tvm_ffi
from tvm import relax, s_tir
from tvm.relax.frontend.torch import from_exported_program

BACKENDS = ("llvm", "cuda", "opencl")


class ImportFailure(Exception):
    """torch.export or the Relax importer rejected the model; `ops` names what it could not map."""

    def __init__(self, message: str, ops: Sequence[str] = ()):
        super().__init__(message)
        self.ops = list(ops)


# ----------------------------------------------------------------------------- targets
def cpu_target(num_cores: int | None = None) -> tvm.target.Target:
    # A bare {"kind": "llvm"} emits SSE-only code and "mcpu": "native" is rejected in 0.27.
    cores = num_cores or len(os.sched_getaffinity(0))
    return tvm.target.Target(
        {"kind": "llvm", "mcpu": tvm.target.codegen.llvm_get_system_cpu(), "num-cores": cores}
    )


def make_target(backend: str, **opts: Any) -> tvm.target.Target:
    if backend == "llvm":
        return cpu_target(opts.get("num_cores"))
    if backend == "cuda":
        # MetaSchedule's GPU rules read the thread and shared-memory limits from the target
        return tvm.target.Target({"kind": "cuda", "arch": opts.get("arch", "sm_90"), "max_threads_per_block": 1024,
                                  "max_shared_memory_per_block": 49152, "thread_warp_size": 32})
    if backend == "opencl":
        return tvm.target.Target({"kind": "opencl"})
    raise ValueError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")


def target_json(target: tvm.target.Target) -> dict[str, Any]:
    return {k: (str(v) if not isinstance(v, (int, float, bool)) else v) for k, v in target.export().items()
            if k in ("kind", "mcpu", "num-cores", "arch", "keys")}


def vector_lanes_fp32(target: tvm.target.Target) -> int:
    """fp32 lanes of the widest vector register the target has (for vectorise factors)."""
    if target.kind.name != "llvm":
        return 4
    mcpu = str(target.attrs.get("mcpu", ""))
    avx512 = ("avx512", "skylake-avx512", "cascadelake", "icelake", "sapphirerapids",
              "emeraldrapids", "graniterapids", "znver4", "znver5", "x86-64-v4", "cooperlake", "tigerlake")
    if any(k in mcpu for k in avx512):
        return 16
    if mcpu.startswith(("znver", "haswell", "broadwell", "skylake", "alderlake", "x86-64-v3")):
        return 8
    return 4


def device_for(backend: str, index: int = 0):
    return {"llvm": tvm.cpu, "cuda": tvm.cuda, "opencl": tvm.opencl}[backend](index)


# ----------------------------------------------------------------------------- import
def import_torch(model, inputs: Sequence[Any]) -> tvm.IRModule:
    """torch.export with static shapes, then the Relax importer (weights become constants)."""
    import torch

    try:
        with torch.no_grad():
            ep = torch.export.export(model, tuple(inputs))
    except Exception as e:  # noqa: BLE001 - any exporter failure is the task's problem, as data
        raise ImportFailure(f"torch.export failed: {type(e).__name__}: {_first_line(e)}") from e
    try:
        return from_exported_program(ep)
    except Exception as e:  # noqa: BLE001
        msg = str(e)
        ops = sorted(set(re.findall(r"\b(aten\.[\w.]+)", msg)))
        if not ops:  # name the graph's ops that the message mentions, e.g. "linalg_svd"
            ops = sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"
                          and str(n.target).split(".")[-2 if str(n.target).count(".") >= 2 else -1] in msg})
        if not ops:  # otherwise every op the importer has no converter for
            ops = unsupported_ops(ep)
        raise ImportFailure(f"Relax import failed{' on ' + ', '.join(ops) if ops else ''}: "
                            f"{type(e).__name__}: {_first_line(e)}", ops) from e


def unsupported_ops(ep) -> list[str]:
    from tvm.relax.frontend.torch.exported_program_translator import ExportedProgramImporter

    table = ExportedProgramImporter().create_convert_map()
    ops = set()
    for n in ep.graph.nodes:
        if n.op == "call_function":
            name = getattr(n.target, "__name__", str(n.target))
            if name not in table and name.split(".")[0] not in table:
                ops.add(str(n.target))
    return sorted(ops)


def _first_line(e: BaseException) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    # TVM errors end with the useful line; Python errors start with it
    return (lines[-1] if lines and "Traceback" in str(e) else (lines[0] if lines else repr(e)))[:400]


@relax.expr_functor.mutator
class _Lifter(relax.PyExprMutator):
    def __init__(self, mod: tvm.IRModule, prefix: str):
        super().__init__(mod)
        self.vars: list[relax.Var] = []
        self.vals: dict[str, np.ndarray] = {}
        self.prefix = prefix

    def visit_generic_const_(self, c):  # 0.27's hook for R.const
        if len(c.ty.shape) == 0:  # scalars print inline as R.const(x, dtype)
            return c
        v = relax.Var(f"{self.prefix}{len(self.vars)}", c.ty)
        self.vars.append(v)
        self.vals[v.name] = c.value.numpy()
        return v


def lift_consts(mod: tvm.IRModule, func: str = "main", prefix: str = "c") -> tuple[tvm.IRModule, dict[str, np.ndarray]]:
    """Turn every non-scalar constant into a trailing parameter of `func`, so `mod.script()` has no
    `metadata[...]` and re-parses after a textual edit. Values come back via `bind_params`."""
    f = mod[func]
    lifter = _Lifter(mod, prefix)
    body = lifter.visit_expr(f.body)
    nf = relax.Function(list(f.params) + lifter.vars, body, f.ret_ty, f.is_pure, attrs=f.attrs)
    out = tvm.IRModule(dict(mod.functions), attrs=mod.attrs)
    out[mod.get_global_var(func)] = nf
    return out, lifter.vals


def relax_text(mod: tvm.IRModule) -> str:
    return mod.script()


# TVMScript parsing (the IRBuilder's frame stack) and legalization (TE's op_tag scope) keep state in
# process-global Python objects. The evaluator builds the baseline on a second thread while the
# candidate builds, so those two steps are serialised; codegen and linking, the bulk, are not.
_PARSE_LOCK = threading.RLock()


def parse_module(text: str) -> tvm.IRModule:
    with _PARSE_LOCK:
        obj = tvm.script.from_source(text)
    if isinstance(obj, (tvm.tirx.PrimFunc, relax.Function)):
        return tvm.IRModule({"main": obj})
    return obj


def parse_tir(text: str) -> tvm.tirx.PrimFunc:
    with _PARSE_LOCK:
        obj = tvm.script.from_source(text)
    if isinstance(obj, tvm.IRModule):
        funcs = [f for f in obj.functions.values() if isinstance(f, tvm.tirx.PrimFunc)]
        if len(funcs) != 1:
            raise ValueError(f"expected one PrimFunc in the TIR text, found {len(funcs)}")
        return funcs[0]
    if not isinstance(obj, tvm.tirx.PrimFunc):
        raise ValueError(f"expected a T.prim_func, got {type(obj).__name__}")
    return obj


def bind_params(mod: tvm.IRModule, vals: dict[str, np.ndarray], func: str = "main") -> tvm.IRModule:
    names = {p.name for p in mod[func].params}
    missing = [k for k in vals if k not in names]
    if missing and len(missing) == len(vals):
        return mod
    present = {k: tvm.runtime.tensor(v) for k, v in vals.items() if k in names}
    return relax.transform.BindParams(func, present)(mod)


def param_names(mod: tvm.IRModule, func: str = "main") -> list[str]:
    return [p.name for p in mod[func].params]


# ----------------------------------------------------------------------------- lowering / build
def lower(mod: tvm.IRModule, target: tvm.target.Target, gpu_schedule: bool = True) -> tvm.IRModule:
    """Legalize + fold + fuse (the "zero" pipeline), plus DLight default schedules on GPUs.
    `tvm.compile` alone only legalizes on CPU, leaving every op a separate unfused kernel.
    `gpu_schedule=False` stops before DLight, so L1 entries can be applied first (they are keyed by
    the unscheduled PrimFunc) and marked scheduled; `gpu_default_schedule` then does the rest."""
    with _PARSE_LOCK, target:
        out = relax.get_pipeline("zero")(mod)
        if gpu_schedule and target.kind.name in ("cuda", "opencl"):
            out = gpu_default_schedule(out)
    return out


def gpu_default_schedule(mod: tvm.IRModule, target: tvm.target.Target | None = None) -> tvm.IRModule:
    from tvm.s_tir import dlight as dl

    if target is not None:
        with target:
            return gpu_default_schedule(mod)
    # ApplyDefaultSchedule assigns into the module it is given: work on a copy, so a cached
    # unscheduled module (leka.ir) stays unscheduled
    mod = tvm.IRModule(dict(mod.functions), attrs=mod.attrs)
    return dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                   dl.gpu.GeneralReduction(), dl.gpu.Fallback())(mod)


def build(mod: tvm.IRModule, target: tvm.target.Target):
    return tvm.compile(mod, target)


# TVM 0.27 logs one "Warning: Scope Saving:" line per kernel from C++ when a VM executable is
# exported: hundreds of lines of noise at Level 3 that say nothing a user can act on
_EXPORT_NOISE = "Warning: Scope Saving"


def export_library(ex, path: str, options: Sequence[str] = ()) -> None:
    sys.stderr.flush()
    with tempfile.TemporaryFile(mode="w+b") as cap:
        saved = os.dup(2)
        os.dup2(cap.fileno(), 2)
        try:
            ex.export_library(path, options=list(options)) if options else ex.export_library(path)
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


# ----------------------------------------------------------------------------- running
def flatten_outputs(out) -> list:
    if isinstance(out, tvm.runtime.Tensor):
        return [out]
    res = []
    for o in out:
        res.extend(flatten_outputs(o))
    return res


class VMRunner:
    """A built Relax executable on one device: run on numpy inputs, time without Python overhead."""

    def __init__(self, ex, device):
        self.ex = ex
        self.dev = device
        self.vm = relax.VirtualMachine(ex, device)

    def to_device(self, arrays: Sequence[np.ndarray]) -> list:
        return [tvm.runtime.tensor(np.ascontiguousarray(a), self.dev) for a in arrays]

    def run_device(self, dev_args: Sequence[Any]) -> list:
        return flatten_outputs(self.vm["main"](*dev_args))

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        return [o.numpy() for o in self.run_device(self.to_device(arrays))]

    def time_per_call(self, dev_args: Sequence[Any], number: int) -> float:
        """Seconds per call, averaged over `number` back-to-back calls (one sample)."""
        te = self.vm.time_evaluator("main", self.dev, number=number, repeat=1, min_repeat_ms=0)
        return float(te(*dev_args).mean)

    def profile_kernels(self, dev_args: Sequence[Any], repeat: int = 5, warmup: int = 1) -> tuple[list[dict], float]:
        """Per VM call (kernels and builtins): seconds per iteration and call count, plus the total.
        `VirtualMachine(profile=True)` is gone in 0.27, so time each call with set_instrument."""
        f = self.vm["main"]
        for _ in range(warmup):
            f(*dev_args)
        stats: dict[str, list[float]] = defaultdict(list)
        start: dict[str, float] = {}
        # GPU launches return at once: sync around each call so the wall time is the kernel's
        sync = self.dev.sync if self.dev.dlpack_device_type() != tvm.cpu().dlpack_device_type() else (lambda: None)

        def instrument(func, sym, before_run, ret_value, *args):
            sync()
            if before_run:
                start[sym] = time.perf_counter()
            else:
                stats[sym].append(time.perf_counter() - start.pop(sym, time.perf_counter()))
            return 0  # VMInstrumentReturnKind.NO_OP

        self.vm.set_instrument(instrument)
        t0 = time.perf_counter()
        try:
            for _ in range(repeat):
                f(*dev_args)
        finally:
            self.vm.set_instrument(lambda *a: 0)
        total = (time.perf_counter() - t0) / repeat
        rows = [{"name": k, "seconds": sum(v) / repeat, "calls": len(v) // repeat} for k, v in stats.items()]
        rows.sort(key=lambda r: -r["seconds"])
        return rows, total


def planned_memory_bytes(mod: tvm.IRModule, target: tvm.target.Target) -> int | None:
    """Bytes the static memory planner allocates for intermediates (estimate_memory_usage must see
    the module after CallTIRRewrite + StaticPlanBlockMemory; on a fully lowered one it says 0)."""
    try:
        with target:
            planned = tvm.transform.Sequential([
                relax.transform.RewriteDataflowReshape(), relax.transform.ToNonDataflow(),
                relax.transform.RemovePurityChecking(), relax.transform.CallTIRRewrite(),
                relax.transform.StaticPlanBlockMemory()])(mod)
        text = str(relax.analysis.estimate_memory_usage(planned))
    except Exception:  # noqa: BLE001 - an estimate, never worth failing an evaluation over
        return None
    # "With memory planning, there are N constant-size memory allocation(s) with total size X GB."
    m = re.findall(r"With memory planning, .*? total size ([\d.eE+-]+) GB", text)
    return int(round(sum(float(x) for x in m) * 2**30)) if m else 0


# ----------------------------------------------------------------------------- sources
def find_module(ex, kind: str):
    def walk(m):
        if m.kind == kind:
            return m
        for im in m.imports:
            r = walk(im)
            if r is not None:
                return r
        return None

    return walk(ex.mod if hasattr(ex, "mod") else ex)


def inspect_source(ex, backend: str, fmt: str = "") -> str:
    """LLVM IR (`fmt="ll"`) or assembly (`"asm"`) on CPU; CUDA C / OpenCL C on GPUs."""
    kind = {"llvm": "llvm", "cuda": "cuda", "opencl": "opencl"}[backend]
    m = find_module(ex, kind)
    if m is None:
        return ""
    if backend == "llvm":
        return m.inspect_source(fmt or "ll")
    return m.inspect_source(fmt)



# ============================================================================ IR layers (leka.ir / edits / views)
# Added for the three-layer candidate IR: L0 passes, L1 helpers, L2 source overrides, RPC.
def mark_scheduled(func: tvm.tirx.PrimFunc) -> tvm.tirx.PrimFunc:
    """DLight skips PrimFuncs with this attribute (s_tir/dlight/base/transform.py `_is_scheduled`)."""
    return func.with_attr("tirx.is_scheduled", True)


def is_scheduled(func: tvm.tirx.PrimFunc) -> bool:
    return bool(func.attrs is not None and "tirx.is_scheduled" in func.attrs
                and int(func.attrs["tirx.is_scheduled"]) == 1)


def error_text(e: BaseException, limit: int = 2000) -> str:
    """A TVM / TVMScript error as an agent can act on it: the diagnostic and the offending source
    line (TVMScript prints `--> file:line` plus the line with a caret), without C++ backtraces."""
    raw = str(e).strip()
    lines = raw.splitlines()
    keep: list[str] = []
    skip_bt = False
    for ln in lines:
        s = ln.strip()
        if s.startswith("Traceback") or s.startswith("Stack trace"):
            skip_bt = True
            continue
        if skip_bt and (s.startswith("File ") or re.match(r"^\d+: ", s) or s.startswith("at ")):
            continue
        skip_bt = False
        keep.append(ln.rstrip())
    text = "\n".join(k for k in keep if k.strip()) or repr(e)
    text = f"{type(e).__name__}: {text}" if not text.startswith(type(e).__name__) else text
    return text if len(text) <= limit else text[: limit // 2] + "\n...\n" + text[-limit // 2:]


def well_formed(mod: tvm.IRModule) -> bool:
    return bool(relax.analysis.well_formed(mod))


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


# ---------------------------------------------------------------- L0 passes: IRModule (constants bound) -> IRModule
def _seq(*passes) -> Any:
    return tvm.transform.Sequential(list(passes))


def l0_fold_batchnorm(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    # conv2d(const W) -> batch_norm  =>  conv2d(W') + add(b'); any other batch_norm -> mul/add
    return _seq(relax.transform.FoldBatchnormToConv2D(), relax.transform.DecomposeOpsForInference(),
                relax.transform.FoldConstant(), relax.transform.CanonicalizeBindings(),
                relax.transform.DeadCodeElimination())(mod)


def l0_convert_layout_nhwc(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    # relax.clip has no layout rule and gets wrapped in permute_dims: run clip_to_relu_min first
    out = relax.transform.ConvertLayout({"relax.nn.conv2d": ["NHWC", "OHWI"]})(mod)
    return _seq(relax.transform.FoldConstant(), relax.transform.CanonicalizeBindings(),
                relax.transform.DeadCodeElimination())(out)


def _rewrite_relax(mod: tvm.IRModule, pattern, fn) -> tvm.IRModule:
    from tvm.relax.dpl import rewrite_call

    out = tvm.IRModule({gv: (rewrite_call(pattern, fn, f) if isinstance(f, relax.Function) else f)
                        for gv, f in mod.functions.items()}, attrs=mod.attrs)
    return out


def l0_clip_to_relu_min(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    from tvm.relax.dpl import is_op, wildcard

    x = wildcard()
    pat = is_op("relax.clip")(x, wildcard(), wildcard())

    def rw(expr, m):
        lo, hi = expr.args[1], expr.args[2]
        lo_v = float(lo.value) if hasattr(lo, "value") else None
        hi_v = float(hi.value) if hasattr(hi, "value") else None
        if lo_v != 0.0 or hi_v is None:
            return expr
        dt = str(m[x].ty.dtype)
        return relax.op.minimum(relax.op.nn.relu(m[x]), relax.const(hi_v, dt))

    return _rewrite_relax(mod, pat, rw)


def l0_pow_to_multiply(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    """power(x, 2) -> x * x, power(x, 0.5) -> sqrt(x). Exact, cheaper, and it sidesteps CUDA's fast
    `__powf`, which returns NaN for a negative base even with an integral exponent (seen on the H200:
    the RMSNorm's x.pow(2) of a Llama block came out NaN under DLight's default schedules)."""
    from tvm.relax.dpl import is_const, is_op, wildcard

    x, c = wildcard(), is_const()
    pat = is_op("relax.power")(x, c)

    def rw(expr, m):
        v = m[c].value.numpy()
        if v.size != 1:
            return expr
        e = float(v.reshape(()))
        if e == 2.0:
            return relax.op.multiply(m[x], m[x])
        if e == 0.5:
            return relax.op.sqrt(m[x])
        return expr

    return _rewrite_relax(mod, pat, rw)


def l0_conv1x1_to_matmul(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    """1x1 conv (groups 1, stride 1, no padding, constant weight) -> reshape + matmul + reshape.
    NHWC/OHWI: (NHW, C) @ (C, O); NCHW/OIHW: (O, C) @ (N, C, HW), broadcast over N."""
    from tvm.relax.dpl import is_const, is_op, wildcard

    x_p, w_p = wildcard(), is_const()
    pat = is_op("relax.nn.conv2d")(x_p, w_p)

    def rw(expr, m):
        a = expr.attrs
        if not (a.groups == 1 and all(int(s) == 1 for s in a.strides) and all(int(p) == 0 for p in a.padding)
                and all(int(d) == 1 for d in a.dilation) and (a.out_layout in ("", a.data_layout))):
            return expr
        w = m[w_p].value.numpy()
        xs = [int(v) for v in m[x_p].ty.shape]
        if a.data_layout == "NHWC" and a.kernel_layout == "OHWI" and w.shape[1] == w.shape[2] == 1:
            N, H, W, C = xs
            n_out = w.shape[0]
            xm = relax.op.reshape(m[x_p], (N * H * W, C))
            wm = relax.const(np.ascontiguousarray(w.reshape(n_out, C).T))
            return relax.op.reshape(relax.op.matmul(xm, wm), (N, H, W, n_out))
        if a.data_layout == "NCHW" and a.kernel_layout == "OIHW" and w.shape[2] == w.shape[3] == 1:
            N, C, H, W = xs
            n_out = w.shape[0]
            xm = relax.op.reshape(m[x_p], (N, C, H * W))
            wm = relax.const(np.ascontiguousarray(w.reshape(n_out, C)))
            return relax.op.reshape(relax.op.matmul(wm, xm), (N, n_out, H, W))
        return expr

    return _rewrite_relax(mod, pat, rw)


def l0_fuse(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    # legalize + FuseOps + FuseTIR made explicit in L0 (the PrimFuncs then show in the Relax text)
    with target:
        return _seq(relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
                    relax.transform.FoldConstant(), relax.transform.FuseOps(), relax.transform.FuseTIR(),
                    relax.transform.DeadCodeElimination())(mod)


def l0_decompose_ops(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    return _seq(relax.transform.DecomposeOpsForInference(), relax.transform.CanonicalizeBindings())(mod)


def l0_fold_constant(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    return _seq(relax.transform.FoldConstant(), relax.transform.CanonicalizeBindings())(mod)


def l0_dead_code_elimination(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    return relax.transform.DeadCodeElimination()(mod)


def l0_combine_parallel_matmul(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    # q/k/v (and gate/up) projections of one input become one wider matmul + split
    return _seq(relax.transform.CombineParallelMatmul(), relax.transform.FoldConstant(),
                relax.transform.CanonicalizeBindings(), relax.transform.DeadCodeElimination())(mod)


def l0_eliminate_common_subexpr(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    return _seq(relax.transform.EliminateCommonSubexpr(), relax.transform.DeadCodeElimination())(mod)


def l0_fuse_transpose_matmul(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    return relax.transform.FuseTransposeMatmul()(mod)


L0_PASS_FNS = {
    "fold_batchnorm": l0_fold_batchnorm,
    "convert_layout_nhwc": l0_convert_layout_nhwc,
    "conv1x1_to_matmul": l0_conv1x1_to_matmul,
    "clip_to_relu_min": l0_clip_to_relu_min,
    "pow_to_multiply": l0_pow_to_multiply,
    "fuse": l0_fuse,
    "decompose_ops": l0_decompose_ops,
    "fold_constant": l0_fold_constant,
    "dead_code_elimination": l0_dead_code_elimination,
    "combine_parallel_matmul": l0_combine_parallel_matmul,
    "eliminate_common_subexpr": l0_eliminate_common_subexpr,
    "fuse_transpose_matmul": l0_fuse_transpose_matmul,
}


# ---------------------------------------------------------------- L1 / L2 helpers
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
    with _PARSE_LOCK:
        return tvm.script.from_source(text)


def build_prim_func(func: tvm.tirx.PrimFunc, target: tvm.target.Target, name: str = "main"):
    """Compile one PrimFunc alone (a legality check for L1 edits; the source of one kernel)."""
    f = func.with_attr("global_symbol", name)
    return tvm.compile(tvm.IRModule({name: f}), target=target)


def runtime_source(rt_mod, fmt: str = "") -> str:
    """Source of a compiled runtime module or of the device module it imports (CUDA C, OpenCL C)."""
    for kind in ("cuda", "opencl"):
        m = find_module(rt_mod, kind)
        if m is not None:
            return m.inspect_source(fmt)
    m = find_module(rt_mod, "llvm")
    return m.inspect_source(fmt or "ll") if m is not None else ""


class source_postproc:
    """Context manager: while active, `tvm.compile` for `backend` passes the generated CUDA / OpenCL
    source through `fn(source) -> source` (the global `tvm_callback_<backend>_postproc`). Restores
    the previous callback (or none) on exit."""

    def __init__(self, backend: str, fn):
        self.name = f"tvm_callback_{backend}_postproc"
        self.fn = fn
        self.prev = None

    def __enter__(self):
        self.prev = tvm_ffi.get_global_func(self.name, allow_missing=True)

        def cb(code, *rest):
            return self.fn(str(code))

        tvm_ffi.register_global_func(self.name, cb, override=True)
        return self

    def __exit__(self, *exc):
        tvm_ffi.remove_global_func(self.name)
        if self.prev is not None:
            tvm_ffi.register_global_func(self.name, self.prev, override=True)
        return False


def nvcc_compile(src: str, arch: str = "sm_90", fmt: str = "ptx") -> bytes:
    """Compile CUDA C with the local nvcc (raises with nvcc's diagnostics)."""
    from tvm.support import nvcc

    with tvm.target.Target({"kind": "cuda", "arch": arch}):
        return bytes(nvcc.compile_cuda(src, target_format=fmt, compiler="nvcc"))


def llvm_ir_to_object(ll_path: str, obj_path: str) -> None:
    """LLVM IR text -> object file through TVM's bundled LLVM (no clang needed)."""
    m = tvm.runtime.load_module(ll_path)
    m.write_to_file(obj_path) if hasattr(m, "write_to_file") else m.save(obj_path)


def attach_object_file(ex, obj_path: str) -> None:
    """Not needed for `export_library` (pass the object in `options`); kept for symmetry."""
    ex.mod.import_module(tvm.runtime.load_module(obj_path))


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


# ---------------------------------------------------------------- RPC
def rpc_connect(host: str, port: int, key: str = "", session_timeout: int = 0):
    from tvm import rpc

    return rpc.connect(host, port, key=key, session_timeout=session_timeout)


def rpc_request(tracker_host: str, tracker_port: int, key: str, priority: int = 1, session_timeout: int = 0):
    from tvm import rpc

    return rpc.connect_tracker(tracker_host, tracker_port).request(key, priority=priority,
                                                                  session_timeout=session_timeout)


def rpc_tracker_summary(host: str, port: int) -> dict:
    from tvm import rpc

    return dict(rpc.connect_tracker(host, port).summary())


def remote_device(remote, backend: str, index: int = 0):
    return {"llvm": remote.cpu, "cuda": remote.cuda, "opencl": remote.cl}[backend](index)


def remote_vm(remote, lib_name: str, backend: str):
    """A Relax VM on the remote, over a library already uploaded with `remote.upload`."""
    rlib = remote.load_module(lib_name)
    dev = remote_device(remote, backend)
    return relax.VirtualMachine(rlib, dev), dev


def tensor_on(arr: np.ndarray, dev):
    return tvm.runtime.tensor(np.ascontiguousarray(arr), dev)


# ----------------------------------------------------------------------------- TIR analysis (profilers)
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


def sblock_summaries(func: tvm.tirx.PrimFunc) -> list[dict[str, Any]]:
    """One record per s_tir block (root excluded): name, iteration kinds ("S"/"R"/...), how often
    the block runs (product of its iteration domains, so splits and reorders do not change it), float
    ops per run, whether it only copies data, and whether it multiplies two loads (multiply-add)."""
    from tvm import s_tir, tirx

    kinds = {0: "S", 2: "R", 1: "T", 3: "O", 4: "U"}
    out: list[dict[str, Any]] = []

    def visit(stmt) -> None:
        if stmt is None:
            return
        if isinstance(stmt, s_tir.SBlockRealize):
            b = stmt.block
            if b.name_hint != "root":
                iters = "".join(kinds.get(int(iv.iter_type), "?") for iv in b.iter_vars)
                extents = []
                for iv in b.iter_vars:
                    try:
                        extents.append(int(iv.dom.extent))
                    except (TypeError, ValueError):
                        extents.append(1)
                stores: list[Any] = []
                collect_stores(b.body, stores)
                ops, muls, copy = 0, [], bool(stores)
                for st in stores:
                    n, m = _expr_ops(st.value)
                    ops, muls = ops + n, muls + m
                    copy = copy and _is_copy(st.value)
                out.append({"name": str(b.name_hint), "iters": iters, "extents": extents,
                            "executions": int(np.prod(extents)) if extents else 1, "ops": ops,
                            "copy": copy, "mul_of_loads": "loads" in muls, "has_init": b.init is not None,
                            "stores": [str(st.buffer.name) for st in stores]})
            visit(b.body)
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

    def collect_stores(stmt, acc: list) -> None:
        # stores that belong to this block, not to nested blocks (those are visited on their own)
        if stmt is None or isinstance(stmt, s_tir.SBlockRealize):
            return
        if isinstance(stmt, tirx.BufferStore):
            acc.append(stmt)
            return
        if hasattr(stmt, "seq"):
            for s in stmt.seq:
                collect_stores(s, acc)
            return
        for attr in ("body", "then_case", "else_case"):
            child = getattr(stmt, attr, None)
            if isinstance(child, tirx.Stmt):
                collect_stores(child, acc)

    visit(func.body)
    return out


def run_prim_func(rt_mod, arrays: Sequence[np.ndarray], name: str = "main", number: int = 0,
                  repeat: int = 3) -> tuple[list[np.ndarray], float | None]:
    """Call a compiled single-PrimFunc module (`build_prim_func`) on CPU with every buffer given
    (inputs and preallocated outputs, in parameter order). Returns all buffers afterwards and, when
    `number` > 0, the median seconds per call over `repeat` samples (agents' experiments, tests)."""
    dev = tvm.cpu()
    # np.ascontiguousarray turns a 0-d array into a 1-d one; a copy keeps the rank
    args = [tvm.runtime.tensor(np.array(a, copy=True, order="C"), dev) for a in arrays]
    f = rt_mod[name]
    f(*args)
    secs = None
    if number > 0:
        m = rt_mod.mod if hasattr(rt_mod, "mod") else rt_mod  # tvm.compile returns an Executable
        te = m.time_evaluator(name, dev, number=number, repeat=repeat)
        secs = float(te(*args).median)
    return [a.numpy() for a in args], secs


def cuda_runtime_setup() -> None:
    """Before running CUDA modules: TVM keeps CUDA C and compiles it at load through the global
    `tvm_callback_cuda_compile` (registered by tvm.support.nvcc); prefer nvcc when it is on PATH,
    else NVRTC (needs the cuda-python bindings)."""
    import shutil

    if shutil.which("nvcc"):
        os.environ.setdefault("TVM_CUDA_COMPILE_MODE", "nvcc")
    from tvm.support import nvcc  # noqa: F401 - registers the compile callback


# ----------------------------------------------------------------------------- MetaSchedule
def _fast_builder(max_workers: int = 2, timeout_sec: float = 120.0):
    """LocalBuilder whose workers skip `import tvm.s_tir.tensor_intrin` (~23 s per fresh worker
    here, so the default 30 s builder timeout kills every candidate). The build function is a
    closure so cloudpickle ships it by value to workers that cannot import this module's caller."""
    from tvm.s_tir import meta_schedule as ms

    def fast_build(mod, target, _params):
        from tvm.driver import build as tvm_build
        from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

        if target.kind.name == "cuda":  # a fresh worker: register the CUDA C compile callback
            from tvm.support import nvcc  # noqa: F401

        mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
        return tvm_build(mod, target=target)

    return ms.builder.LocalBuilder(f_build=fast_build, max_workers=max_workers, timeout_sec=timeout_sec)


def tune_relax(lowered: tvm.IRModule, target: tvm.target.Target, work_dir: str, trials: int, seed: int = 0) -> int:
    """Tune every fused PrimFunc of a lowered module with MetaSchedule; the JSON database lands in
    work_dir. Returns the number of tuning tasks."""
    from tvm.s_tir import meta_schedule as ms

    tasks = ms.relax_integration.extract_tasks(lowered, target)
    if not tasks:
        return 0
    ms.relax_integration.tune_relax(
        mod=lowered, params={}, target=target, work_dir=work_dir, max_trials_global=trials,
        max_trials_per_task=max(4, trials // len(tasks)), num_trials_per_iter=min(8, max(2, trials)),
        builder=_fast_builder(), seed=seed)
    return len(tasks)


def apply_tuning_db(lowered: tvm.IRModule, target: tvm.target.Target, work_dir: str) -> tvm.IRModule:
    from tvm.s_tir import meta_schedule as ms

    db = ms.database.JSONDatabase(work_dir=work_dir)
    with target, db:
        return relax.transform.MetaScheduleApplyDatabase(enable_warning=False)(lowered)


# ----------------------------------------------------------------------------- compile options (L2)
LLVM_OPTIONS = {"fast-math", "fast-math-contract", "fast-math-reassoc", "fast-math-nnan", "fast-math-ninf",
                "fast-math-nsz", "fast-math-arcp", "opt-level"}


def with_target_options(target: tvm.target.Target, opts: dict[str, Any]) -> tvm.target.Target:
    """The same target with extra codegen attributes (LLVM fast-math flags, opt-level)."""
    base = {k: v for k, v in target.export().items() if k not in ("keys", "tag", "features")}
    return tvm.target.Target({**base, **opts})


# ----------------------------------------------------------------------------- CUDA devices
def cuda_device_info(index: int = 0) -> dict[str, Any] | None:
    """Name, compute capability and memory of CUDA device `index`, or None where TVM sees none
    (no driver, no GPU). Initialises CUDA in the calling process: never call it in a process that
    forks evaluation children afterwards (the evaluator's forkserver does not)."""
    dev = tvm.cuda(index)
    if not dev.exist:
        return None
    return {"name": str(dev.device_name), "compute_version": str(dev.compute_version),
            "total_bytes": int(dev.total_global_memory)}


def device_free_bytes(dev) -> int | None:
    try:
        return int(dev.available_global_memory)
    except Exception:  # noqa: BLE001 - a driver without the query: no number, not an error
        return None


class L2Flusher:
    """Overwrites a device buffer larger than the L2 cache (KernelBench's flush), so a timed call
    never reads data a previous call left in L2. A device-to-device copy on the default stream:
    it is ordered before whatever is launched next, so the copy itself is never timed."""

    def __init__(self, dev, nbytes: int = 128 * 2**20):
        n = nbytes // 4
        self.src = tvm.runtime.tensor(np.zeros(n, dtype="float32"), dev)
        self.dst = tvm.runtime.empty((n,), "float32", dev)

    def flush(self) -> None:
        self.src.copyto(self.dst)


def time_flushed(runner: VMRunner, dev_args: Sequence[Any], number: int, flusher: L2Flusher) -> float:
    """Seconds per call of `runner`'s main, each call timed alone by TVM's device timer (CUDA events,
    synchronised) after an L2 flush; the mean over `number` calls."""
    te = runner.vm.time_evaluator("main", runner.dev, number=1, repeat=1, min_repeat_ms=0)
    total = 0.0
    for _ in range(number):
        flusher.flush()
        total += float(te(*dev_args).mean)
    return total / number
