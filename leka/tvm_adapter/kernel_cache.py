"""Compiled kernels cached across a run's candidates (llvm): a Level-3 candidate differs from its
parent in one or a few PrimFuncs, yet `tvm.compile` generates code for all of them (about 3 s for
MobileNetV2's 57 kernels here, nearly all of it in `tirx.build`).

`build_with_kernel_cache` does what `tvm.compile` does for a Relax module on a CPU target (the default
Relax pipeline, VM codegen, TIR build, VM link), except the TIR build: each PrimFunc is looked up by
the structural hash of the function (its symbol name included: the VM calls kernels by name), the
target and the TVM version, as a one-kernel shared library under DIR; the missing ones are built, each
exported to its own library (a candidate's new kernels are the next candidate's cached ones), and all
are linked into the executable as imported libraries. Every kernel of every candidate then runs from a
shared library, as the cached baseline does (benchmark/baselines.py), so the A/A check compares like
with like. Any failure falls back to `tvm.compile` (the caller gets the same executable, slower)."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import tvm
import tvm_ffi
from tvm import relax
from tvm.relax import _ffi_api as _rffi
from tvm.relax import vm_build as _vmb

from leka.tvm_adapter.lowering import export_library
from leka.tvm_adapter.targets import target_json, tvm_version

_LOADED: dict[str, tvm.runtime.Module] = {}  # path -> module, per process (a child evaluates once)
_BUILD_LOCK = threading.Lock()  # candidate and baseline build on two threads, often the same kernels
_SOURCES: dict[str, tuple] = {}  # path -> (name, PrimFunc, TIR module attrs, target): for kernel_asm


def _key(func, target) -> str:
    meta = json.dumps({"tvm": tvm_version(), "target": target_json(target)}, sort_keys=True)
    h = tvm_ffi.structural_hash(func) & 0xFFFFFFFFFFFFFFFF
    return hashlib.sha256(f"{meta}|{h:016x}".encode()).hexdigest()[:24]


def _path(name: str, func, target, cache: Path) -> Path:
    return cache / f"{name[:60]}-{_key(func, target)}.so"


def _build_missing(missing: list[tuple[str, object, Path]], tir_attrs, target) -> None:
    """Compile the missing kernels (one at a time: TVM's passes run in Python), then link each into
    its library, the links side by side (each is a compiler process)."""
    from concurrent.futures import ThreadPoolExecutor

    jobs = []
    for name, func, path in missing:
        one = tvm.IRModule({tvm.ir.GlobalVar(name): func}, attrs=tir_attrs)
        jobs.append((tvm.tirx.build(one, target=target, pipeline="default"), path))

    def link(job) -> None:
        lib, path = job
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.so")
        export_library(lib, str(tmp))
        tmp.replace(path)  # atomic: evaluations running at once may build the same kernel

    with ThreadPoolExecutor(max_workers=max(1, min(4, len(os.sched_getaffinity(0))))) as pool:
        list(pool.map(link, jobs))


def build_with_kernel_cache(mod: tvm.IRModule, target: tvm.target.Target, cache_dir: str):
    """`tvm.compile(mod, target)` for llvm, kernels from (and into) `cache_dir`. Returns (executable,
    kernels found cached, kernels built, the kernels' library paths: `kernel_asm` reads their assembly). Raises where the module is not
    for it (external modules, no kernels): the caller then uses `tvm.compile`."""
    with target:
        lowered = relax.get_pipeline("default")(mod)
    attrs = dict(lowered.attrs) if lowered.attrs else {}  # as relax.build's _extract_attrs
    ext_libs, constants = attrs.get("external_mods", []), attrs.get("const_name_to_constant", {})
    if ext_libs:
        raise ValueError("external modules (BYOC / L2 objects) go through tvm.compile")
    builder = relax.ExecBuilder()
    lowered = _vmb._vmcodegen(builder, lowered, "bytecode")
    tir_mod = _vmb._filter_tir(lowered)
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    kernels = [(gv.name_hint, f) for gv, f in (tir_mod.functions.items() if tir_mod is not None else [])]
    paths = [_path(name, f, target, cache) for name, f in kernels]
    for (name, f), p in zip(kernels, paths, strict=True):
        _SOURCES[str(p)] = (name, f, tir_mod.attrs, target)
    with _BUILD_LOCK:  # the second thread finds what the first built
        missing = [(name, f, p) for (name, f), p in zip(kernels, paths, strict=True) if not p.exists()]
        if missing:
            _build_missing(missing, tir_mod.attrs, target)
    libs = []
    for p in paths:
        if str(p) not in _LOADED:
            _LOADED[str(p)] = tvm.runtime.load_module(str(p))
        libs.append(_LOADED[str(p)])
    asms, built = [str(p) for p in paths], len(missing)
    hit = len(paths) - built
    if not libs:
        raise ValueError("no kernels: nothing to cache")
    # the first kernel library stands as the executable's host library: without one, VMLink makes an
    # empty C source module, which is not runnable and sends the VM through export + reload
    ex = _vmb.VMExecutable(_rffi.VMLink(builder, target, libs[0], libs[1:], dict(constants)))
    return ex, hit, built, asms


def kernel_asm(paths: list[str]) -> str:
    """The assembly of the kernels of a kernel-cached build (what `inspect_source(ex, "llvm", "asm")`
    gives for a JIT-built module), each generated once, at first need, and kept beside its library."""
    texts = []
    for p in paths:
        asm = Path(p).with_suffix(".s")
        if not asm.exists():
            name, func, attrs, target = _SOURCES[p]
            lib = tvm.tirx.build(tvm.IRModule({tvm.ir.GlobalVar(name): func}, attrs=attrs), target=target)
            tmp = asm.with_name(f".{asm.stem}.{os.getpid()}.s")
            tmp.write_text(lib.inspect_source("asm"))
            tmp.replace(asm)
        texts.append(asm.read_text())
    return "\n".join(texts)
