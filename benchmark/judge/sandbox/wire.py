"""The sandbox's wire (benchmark/judge/sandbox/control.py, worker.py): the framing of the control channel
(length-prefixed JSON only), the output records a worker reports, reading a stopped worker's memory,
the errors the judge raises, and `Served`, what a worker serves. Shared by the judge's half and the
worker's half, which import it and never each other's internals."""

from __future__ import annotations

import ctypes
import json
import os
import socket
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ALIGN = 64  # bytes: every view into a pool starts on a 64-byte boundary, as TVM allocates
LIBC = ctypes.CDLL(None, use_errno=True)


class WorkerDied(RuntimeError):
    """The worker ended (or broke the protocol) before answering: the candidate crashed."""


class WorkerTimeout(WorkerDied):
    """The worker did not answer a request within its deadline (`Deadline`) and was killed."""


class WorkerError(RuntimeError):
    """The worker answered with an error raised by the code it runs (a runtime error of the candidate);
    `kind` is an error_kind the worker named (input_mutated: its fault handler saw a write into the pool)."""

    def __init__(self, msg: str, kind: str | None = None):
        super().__init__(msg)
        self.kind = kind if kind in ("input_mutated",) else None


RECORD = 12  # int64s per output in a run's answer: address, bytes, dtype, ndim, 8 dims (call_loop.py)
_DL_CODES = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 6: "bool"}


def dtype_code(dtype: Any) -> int:
    """A numpy dtype as DLPack's (code << 16 | bits << 8 | lanes)."""
    d = np.dtype(dtype)
    code = {"i": 0, "u": 1, "f": 2, "b": 6}.get(d.kind, 2)
    return (code << 16) | (d.itemsize * 8 << 8) | 1


def _dtype_name(packed: int) -> str:
    code, bits, lanes = packed >> 16, (packed >> 8) & 0xFF, packed & 0xFF
    name = _DL_CODES.get(code, f"code{code}")
    return ("bool" if name == "bool" else f"{name}{bits}") + (f"x{lanes}" if lanes > 1 else "")


@dataclass(frozen=True)
class Out:
    """One output as the worker reported it (untrusted: sizes are checked against the reference's)."""

    addr: int
    nbytes: int
    dtype: str
    shape: tuple[int, ...]


def _outs(raw: list[int]) -> list[Out]:
    """RECORD-int64 records as Outs (untrusted: checked against the reference's shapes later)."""
    row = []
    for k in range(len(raw) // RECORD):
        r = raw[RECORD * k: RECORD * (k + 1)]
        ndim = min(max(r[3], 0), 8)
        row.append(Out(addr=r[0], nbytes=r[1], dtype=_dtype_name(r[2]), shape=tuple(r[4:4 + ndim])))
    return row


class _Fetched(Sequence):
    """A device request's calls: call j's outputs are copied to the host when asked for (one at a time:
    a fetch frees the one before)."""

    def __init__(self, w: Any, n: int):  # a sandbox.SandboxWorker
        self.w, self.n = w, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, j):  # type: ignore[override]
        if isinstance(j, slice):
            raise TypeError("a device request's calls are fetched one at a time")
        j = j + self.n if j < 0 else j
        if not 0 <= j < self.n:
            raise IndexError(j)
        return self.w.fetch(j)


# --------------------------------------------------------------------------- framing (JSON only)
def send_frame(sock: socket.socket, obj: Any) -> None:
    data = json.dumps(obj, separators=(",", ":")).encode()
    sock.sendall(struct.pack("<Q", len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise WorkerDied("the control channel closed")
        buf += chunk
    return bytes(buf)


@dataclass
class Deadline:
    """How long the judge waits for a worker's answer (issue 43): without a bound of its own a worker that
    never answered held the judge for the evaluation's whole `timeout_s` (600 s). A request of n calls
    gets `floor_s + factor * n * per_call`, per_call the slowest per-call time this worker's earlier
    requests took (a first call's one-time costs included: the bound only grows); a request of no call
    (state, upload, fetch) the floor. Before any call was measured a request of calls gets `first_s`: an
    honest first call may be slow (one-time costs, an untuned kernel of a large task), and nothing of
    this worker says how slow yet, but a worker silent from its first request on no longer holds the
    judge for the evaluation's whole `timeout_s`."""

    floor_s: float = 20.0  # evaluator.sandbox_request_floor_s
    factor: float = 10.0  # evaluator.sandbox_request_factor
    first_s: float = 180.0  # evaluator.sandbox_first_request_s
    per_call: float | None = None

    @staticmethod
    def calls(msg: dict[str, Any]) -> int:
        op = msg.get("op")
        if op == "run":
            return max(0, int(msg.get("n", 0)))
        return int(msg.get("repeat", 0)) + 1 if op == "profile" else 0

    def limit(self, msg: dict[str, Any]) -> float | None:
        n = self.calls(msg)
        if n and self.per_call is None:
            return self.floor_s + self.first_s
        return self.floor_s + self.factor * n * (self.per_call or 0.0)

    def seen(self, msg: dict[str, Any], seconds: float) -> None:
        n = self.calls(msg) if msg.get("op") == "run" else 0
        if n:
            self.per_call = max(self.per_call or 0.0, seconds / n)


MAX_MESSAGE = 64 << 20
START_TIMEOUT_S = 120.0  # a worker's setup (warm-up, filter) takes well under a second


def recv_frame(sock: socket.socket) -> Any:
    (n,) = struct.unpack("<Q", _recv_exact(sock, 8))
    if n > MAX_MESSAGE:
        raise WorkerDied(f"a message of {n} bytes, over the protocol's {MAX_MESSAGE}")
    try:
        return json.loads(_recv_exact(sock, n))
    except ValueError as e:
        raise WorkerDied(f"a message that is not JSON: {e}") from e


# --------------------------------------------------------------------------- reading the worker's memory
class _IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def read_memory(pid: int, addr: int, nbytes: int) -> bytearray:
    """`nbytes` of process `pid`'s memory at `addr` (process_vm_readv, in pieces of at most 1 GiB)."""
    out = bytearray(nbytes)
    base = (ctypes.c_char * max(nbytes, 1)).from_buffer(out) if nbytes else None
    done = 0
    while done < nbytes:
        n = min(nbytes - done, 1 << 30)
        local = _IOVec(ctypes.addressof(base) + done, n)
        remote = _IOVec(addr + done, n)
        got = LIBC.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if got <= 0:
            e = ctypes.get_errno()
            raise WorkerDied(f"reading the worker's output at {addr:#x} (+{done}): {os.strerror(e)}")
        done += got
    return out


class ShapeMismatch(RuntimeError):
    """An output whose shape, dtype or size is not the reference's."""


def check_like(call: list[Out], like: Sequence[tuple[tuple[int, ...], str]]) -> None:
    if len(call) != len(like):
        raise ShapeMismatch(f"candidate returned {len(call)} output(s), reference {len(like)}")
    for i, (o, (shape, dtype)) in enumerate(zip(call, like, strict=True)):
        if tuple(o.shape) != tuple(shape):
            raise ShapeMismatch(f"output {i}: shape {tuple(o.shape)}, expected {tuple(shape)}")
        if o.dtype != str(np.dtype(dtype)) and not (o.dtype == "bool" and np.dtype(dtype) == np.bool_):
            raise ShapeMismatch(f"output {i}: dtype {o.dtype}, expected {np.dtype(dtype)}")
        want = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if o.nbytes != want:
            raise ShapeMismatch(f"output {i}: {o.nbytes} bytes, expected {want}")


@dataclass
class DeviceServe:
    """What a worker on a device (CUDA, OpenCL) serves, made in the worker before its filter closes
    (leka/tvm_adapter/runtime.py `device_sandbox_runner`). Device memory cannot be viewed at an offset
    of the host pool, so the worker holds `slots` argument sets on the device: `upload(offsets, n)`
    copies, for slot s < n, input i's pool window at byte offset `offsets[s * k + i]` into it (untimed);
    `run(n, slots_addr)` makes n calls, call c on slot `slots_addr[c]`, synchronised, outputs kept;
    `fetch(j)` is call j's outputs as host arrays, `inputs(s)` slot s's inputs read back (a kernel
    that wrote into its inputs is caught there); `profile(slot, repeat)` the per-kernel profile."""

    upload: Callable[[np.ndarray, int], None]
    run: Callable[[int, int], int]
    fetch: Callable[[int], list[np.ndarray]]
    inputs: Callable[[int], list[np.ndarray]]
    profile: Callable[[int, int], Any] | None
    slots: int


@dataclass
class Served:
    """What the worker process serves, made in the child before the sandbox closes: `setup(ro_pool,
    pool)` returns `(run, profile)` on the CPU (`run` the window loop of leka/tvm_adapter/call_loop.py
    over views of the read-only pool, `profile(offsets, repeat)` the per-kernel profile or None), or a
    `DeviceServe` where `device` is set."""

    setup: Callable[[memoryview, Any], Any]
    n_outputs: int
    threads: int
    sandbox: bool = True  # False: trusted code (torch.compile / ONNX Runtime baselines need files)
    guard: bool = False  # the worker reports process-wide settings its calls changed
    warm: Callable[[], None] | None = None  # thread pools made before the filter closes
    # guard_inputs(lo, hi, fd): a fault in [lo, hi) (the read-only pool) is reported on fd (input_mutated)
    guard_inputs: Callable[[int, int, int], None] | None = None
    # a GPU / OpenCL device: the driver's ioctls allowed, the environment kept (narrowed to what the
    # driver and its compilers read) until the device is set up, then emptied
    device: bool = False
    # the calls of a request whose outputs stay alive to be checked: the last `hold` (0: every call).
    # A ring lets each call write a warm buffer, as in a model's memory plan; the judge then draws the
    # call count so that no call can tell whether it falls in the ring (benchmark/judge/sandbox/checks.py)
    hold: int = 0
    # the worker's compute threads placed one core each after its pools are made (worker.py place_threads)
    pin: bool = False
    # the candidate's sealed L2 libraries: loaded by the worker itself, under leka.core.confine's
    # filter (no exec, socket, file write), never by the judge (their load-time code would run there)
    l2_libs: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- the worker seen from /proc
def faults(pid: int) -> list[int] | None:
    """A worker's minor and major page faults so far (diagnostics, evaluator.timing_diag)."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return [int(f[7]), int(f[9])]
    except (OSError, IndexError, ValueError):
        return None


def cpus(pid: int) -> list[int] | None:
    """The CPU each of a worker's threads last ran on (diagnostics, evaluator.timing_diag)."""
    try:
        return [int(Path(f"/proc/{pid}/task/{t}/stat").read_text().rpartition(")")[2].split()[36])
                for t in sorted(os.listdir(f"/proc/{pid}/task"))]
    except (OSError, IndexError, ValueError):
        return None


def placed_record(placed: Any) -> dict[str, list[int]]:
    """The worker's own report of its threads' cores (evaluator.sandbox_pin): a record, never a verdict."""
    if not isinstance(placed, dict):
        return {}
    return {str(k)[:12]: [int(c) for c in v][:4] for k, v in list(placed.items())[:16]
            if isinstance(v, list) and all(isinstance(c, int) for c in v)}


def jail_dir(libs: Sequence[str] = ()) -> str:
    """A sandboxed worker's root (made by the judge): empty but for the candidate's sealed L2 libraries,
    which the worker loads in there (benchmark/judge/sandbox/worker.py `_late_l2`)."""
    import shutil
    import tempfile

    d = tempfile.mkdtemp(prefix="leka-jail-")
    for so in libs:
        shutil.copyfile(so, os.path.join(d, os.path.basename(so)))
    os.chmod(d, 0o555)
    return d


def remove_jail_dir(d: str | None) -> None:
    import shutil

    if d:
        os.chmod(d, 0o700)
        shutil.rmtree(d, ignore_errors=True)
