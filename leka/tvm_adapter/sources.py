"""Generated sources: LLVM IR / assembly on CPUs, CUDA C / OpenCL C on GPUs; the source postproc hook."""

from __future__ import annotations

import tvm
import tvm_ffi

from leka.backends import all_backends, get_backend


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
    m = find_module(ex, get_backend(backend).name)
    if m is None:
        return ""
    if backend == "llvm":
        return m.inspect_source(fmt or "ll")
    return m.inspect_source(fmt)


def runtime_source(rt_mod, fmt: str = "") -> str:
    """Source of a compiled runtime module or of the device module it imports (CUDA C, OpenCL C)."""
    for kind in (b.name for b in all_backends() if b.gpu):
        m = find_module(rt_mod, kind)
        if m is not None:
            return m.inspect_source(fmt)
    m = find_module(rt_mod, "llvm")
    return m.inspect_source(fmt or "ll") if m is not None else ""


class SourceHookMissing(RuntimeError):
    """The backend has no TVM hook on its generated source (`Backend.source_hook` is None)."""


class source_postproc:
    """Context manager: while active, `tvm.compile` for `backend` passes the generated CUDA / OpenCL
    source through `fn(source) -> source` (the backend's `source_hook`, a TVM global such as
    `tvm_callback_cuda_postproc`). Restores the previous callback (or none) on exit."""

    def __init__(self, backend: str, fn):
        hook = get_backend(backend).source_hook
        if hook is None:  # registering a global TVM never calls would build the source unspliced
            raise SourceHookMissing(f"backend {backend!r} has no hook on its generated source: its L2 "
                                    "kernel texts cannot be spliced in")
        self.name = hook
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
