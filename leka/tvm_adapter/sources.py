"""Generated sources: LLVM IR / assembly on CPUs, CUDA C / OpenCL C on GPUs; the source postproc hook."""

from __future__ import annotations

import threading
from collections.abc import Callable

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


# The hook is one process-wide TVM global, and the judge builds the baseline on a second thread while
# the candidate builds: a callback that spliced whatever it was handed would splice the candidate's
# kernels into the baseline's source too. So the global is one dispatcher, installed once per hook,
# and the splice is the building thread's own.
_DISPATCH_LOCK = threading.Lock()
_DISPATCHERS: set[str] = set()
_LOCAL = threading.local()  # .fns: {hook name: fn} of this thread's active `source_postproc`s


def _thread_fns() -> dict[str, Callable[[str], str]]:
    if not hasattr(_LOCAL, "fns"):
        _LOCAL.fns = {}
    return _LOCAL.fns


def _install_dispatcher(name: str) -> None:
    with _DISPATCH_LOCK:
        if name in _DISPATCHERS:
            return
        prev = tvm_ffi.get_global_func(name, allow_missing=True)

        def dispatch(code, *rest):
            fn = _thread_fns().get(name)
            if fn is not None:
                return fn(str(code))
            # another thread's build (the baseline's): the source as TVM made it, or whatever
            # callback was there before leka's
            return prev(code, *rest) if prev is not None else code

        tvm_ffi.register_global_func(name, dispatch, override=True)
        _DISPATCHERS.add(name)


class source_postproc:
    """Context manager: while active, `tvm.compile` for `backend` on this thread passes the generated
    CUDA / OpenCL source through `fn(source) -> source` (the backend's `source_hook`, a TVM global such
    as `tvm_callback_cuda_postproc`). Builds on other threads meanwhile get their source unchanged."""

    def __init__(self, backend: str, fn: Callable[[str], str]):
        hook = get_backend(backend).source_hook
        if hook is None:  # registering a global TVM never calls would build the source unspliced
            raise SourceHookMissing(f"backend {backend!r} has no hook on its generated source: its L2 "
                                    "kernel texts cannot be spliced in")
        self.name = hook
        self.fn = fn
        self.prev: Callable[[str], str] | None = None

    def __enter__(self) -> source_postproc:
        _install_dispatcher(self.name)
        fns = _thread_fns()
        self.prev = fns.get(self.name)
        fns[self.name] = self.fn
        return self

    def __exit__(self, *exc: object) -> bool:
        fns = _thread_fns()
        if self.prev is None:
            fns.pop(self.name, None)
        else:
            fns[self.name] = self.prev
        return False


def nvcc_compile(src: str, arch: str = "sm_90", fmt: str = "ptx") -> bytes:
    """Compile CUDA C with the local nvcc (raises with nvcc's diagnostics)."""
    from tvm.support import nvcc

    with tvm.target.Target({"kind": "cuda", "arch": arch}):
        return bytes(nvcc.compile_cuda(src, target_format=fmt, compiler="nvcc"))
