"""The one module that imports `tvm`.

TVM renames things between releases (tir -> tirx, nd -> runtime.tensor, profile=True removed in
0.27); keeping every call here means the next rename costs one file. Recipes this follows are in
the shared `tvm-recipes/` folder (verified on TVM 0.27.0.post1 + apache-tvm-ffi 0.1.14.post1).
"""

from __future__ import annotations

import os
import re
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
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
        return tvm.target.Target({"kind": "cuda", "arch": opts.get("arch", "sm_90")})
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
        if not ops:
            ops = sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"
                          and str(n.target).split(".")[1] in msg})
        raise ImportFailure(f"Relax import failed{' on ' + ', '.join(ops) if ops else ''}: "
                            f"{type(e).__name__}: {_first_line(e)}", ops) from e


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


def parse_module(text: str) -> tvm.IRModule:
    obj = tvm.script.from_source(text)
    if isinstance(obj, tvm.tirx.PrimFunc):
        return tvm.IRModule({"main": obj})
    return obj


def parse_tir(text: str) -> tvm.tirx.PrimFunc:
    obj = tvm.script.from_source(text)
    if isinstance(obj, tvm.IRModule):
        funcs = [f for f in obj.functions.values() if isinstance(f, tvm.tirx.PrimFunc)]
        if len(funcs) != 1:
            raise ValueError(f"expected one PrimFunc in the TIR text, found {len(funcs)}")
        return funcs[0]
    if not isinstance(obj, tvm.tirx.PrimFunc):
        raise ValueError(f"expected a T.prim_func, got {type(obj).__name__}")
    return obj


def n_user_inputs(mod: tvm.IRModule, n_params: int, func: str = "main") -> int:
    return len(mod[func].params) - n_params


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
def lower(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    """Legalize + fold + fuse (the "zero" pipeline), plus DLight default schedules on GPUs.
    `tvm.compile` alone only legalizes on CPU, leaving every op a separate unfused kernel."""
    with target:
        out = relax.get_pipeline("zero")(mod)
        if target.kind.name in ("cuda", "opencl"):
            out = gpu_default_schedule(out)
    return out


def gpu_default_schedule(mod: tvm.IRModule) -> tvm.IRModule:
    from tvm.s_tir import dlight as dl

    return dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                   dl.gpu.GeneralReduction(), dl.gpu.Fallback())(mod)


def build(mod: tvm.IRModule, target: tvm.target.Target):
    return tvm.compile(mod, target)


def export_library(ex, path: str, options: Sequence[str] = ()) -> None:
    ex.export_library(path, options=list(options)) if options else ex.export_library(path)


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

        def instrument(func, sym, before_run, ret_value, *args):
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


@dataclass
class Timing:
    median_s: float
    samples: list[float]
