"""Compile-time evaluation out of the trusted processes (issue 43).

Relax's FoldConstant builds and *runs* every PrimFunc it finds called on constants. A PrimFunc that
a candidate's L0 text brought along (`R.call_tir(cls.f, (R.const(...),))`, with `f` calling
`T.call_extern("int32", "system", ...)`, or writing past its buffers) would run in whichever process
lowers the text: the judge, the CLI, the agent loop that holds the API keys.

So a pass pipeline that may evaluate is run here by `run_pipeline`: where the module holds a PrimFunc
(nothing but a candidate's text puts one there before legalization: the suite's roots and the rule
agents' L0 edits are pure Relax), it runs in a forked child under `leka.core.confine` (empty
environment, no exec / fork / socket / file writes, uid nobody as root, bounded memory and time) and
the result comes back as TVM's JSON record (`tvm.ir.load_json` reads it without running anything).
Pure-Relax modules fold in-process, where FoldConstant runs only TVM's own legalized kernels.

The final build (`lowering.build`) runs TVM's default pipeline without FoldConstant, so a module
lowered here is never evaluated at build time either.
"""

from __future__ import annotations

import os
import select
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager

import tvm
import tvm_ffi

from leka.core import confine

TIMEOUT_S = float(os.environ.get("LEKA_CONST_EVAL_TIMEOUT_S", "600"))
AS_BYTES = 16 * 2**30  # the child's address space: a folding step that needs more is not a sane edit


class ConstEvalError(RuntimeError):
    """The isolated pipeline failed (its message names why): the candidate does not lower."""


def has_prim_funcs(mod: tvm.IRModule) -> bool:
    return any(isinstance(f, tvm.tirx.PrimFunc) for f in mod.functions.values())


def run_pipeline(fn: Callable[[tvm.IRModule], tvm.IRModule], mod: tvm.IRModule) -> tvm.IRModule:
    """`fn(mod)`, isolated where `mod` holds PrimFuncs a compile-time evaluation could run."""
    if not has_prim_funcs(mod):
        return fn(mod)
    return isolated(fn, mod)


def _child(fn, mod, w: int) -> None:
    try:
        confine.confine(address_space=AS_BYTES)
        data = b"ok" + tvm.ir.save_json(fn(mod)).encode()
    except BaseException as e:  # noqa: BLE001 - everything goes back as data
        data = b"er" + f"{type(e).__name__}: {e}"[-3000:].encode(errors="replace")
    try:
        os.write(w, struct.pack("<Q", len(data)))
        view = memoryview(data)
        while view:
            view = view[os.write(w, view[: 1 << 20]):]
    finally:
        os._exit(0)


def _read(r: int, pid: int, deadline: float) -> bytes:
    buf = bytearray()
    need = None
    while need is None or len(buf) < need + 8:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([r], [], [], left)[0]:
            os.kill(pid, signal.SIGKILL)
            raise ConstEvalError(f"the constant folding step ran past {TIMEOUT_S:g} s (killed)")
        chunk = os.read(r, 1 << 20)
        if not chunk:
            break
        buf += chunk
        if need is None and len(buf) >= 8:
            need = struct.unpack("<Q", bytes(buf[:8]))[0]
    if need is None or len(buf) < need + 8:
        raise ConstEvalError("the constant folding step died without an answer (a crash or a signal in "
                             "the code it evaluated)")
    return bytes(buf[8:need + 8])


def isolated(fn: Callable[[tvm.IRModule], tvm.IRModule], mod: tvm.IRModule) -> tvm.IRModule:
    if confine.available():
        raise ConstEvalError(f"a module with PrimFuncs is folded only in a confined child: {confine.available()}")
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _child(fn, mod, w)
    os.close(w)
    try:
        data = _read(r, pid, time.monotonic() + TIMEOUT_S)
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    if data[:2] != b"ok":
        raise ConstEvalError(data[2:].decode(errors="replace"))
    return tvm.ir.load_json(data[2:].decode())


# ----------------------------------------------------------------------------- no evaluation at build
_LOCAL = threading.local()
_TIR_BUILD = tvm.tirx.build


def _guarded_tir_build(mod, target=None, pipeline="default"):
    # FoldConstant compiles one PrimFunc through this global to run it; a module build passes an IRModule
    if getattr(_LOCAL, "no_eval", 0) and isinstance(mod, tvm.tirx.PrimFunc):
        raise tvm.error.InternalError("compile-time evaluation is off in this build (leka const_eval)")
    return _TIR_BUILD(mod, target, pipeline)


tvm_ffi.register_global_func("tirx.build", _guarded_tir_build, override=True)


@contextmanager
def no_evaluation():
    """In this thread, FoldConstant folds nothing that needs a PrimFunc run (TVM skips a PrimFunc
    whose build fails): the final build of a lowered module, whose foldable calls the zero pipeline
    folded already, where PrimFuncs of a candidate's text may still be called on constants."""
    _LOCAL.no_eval = getattr(_LOCAL, "no_eval", 0) + 1
    try:
        yield
    finally:
        _LOCAL.no_eval -= 1
