"""The sandboxed worker: the process a candidate's code runs in (issue 26; docs/threat_model.md).

The evaluation process (the judge, benchmark/worker.py) builds the candidate, then forks a worker that
holds the built module and nothing the candidate could use: its environment emptied, its standard
streams on /dev/null, every other file descriptor closed but its control socket and a read-only
mapping of the input pool, an empty root (chroot, as root or inside a user namespace where the machine
allows one) under an unprivileged uid, resource limits (no files written, no core dumps, its data
segment bounded), and after its warm-up (TVM's and OpenMP's thread pools made, libraries loaded) a
seccomp filter (libseccomp, through `pyseccomp`) that allows only what running a kernel needs: no
file opened, no exec, no process or thread created, no socket, no ptrace or access to another
process's memory, no signal to another process, no mapping or protection that makes memory
executable. The worker dies with its judge (parent-death signal).

The judge keeps everything that decides: it writes the inputs into the pool (a memfd the worker maps
read-only, so a write into an input faults), holds the references, reads its own clock around each
request, and reads the outputs it checks straight out of the worker's memory (`process_vm_readv`)
while the worker is stopped (SIGSTOP): a worker only runs while it serves a request of the judge's, so
it can neither finish work after answering nor spin against the other arm's turn. Nothing the worker
writes is read as a verdict: its answers are JSON checked field by field, and a worker that dies or
answers out of protocol has crashed.

A request is a list of calls, each with its own byte offset into every input's pool: the worker's C++
loop (leka/tvm_adapter/call_loop.py `window_loop`) makes the calls and keeps every output alive until
the next request, so the judge can read any call's output afterwards, chosen after the worker answered.

No tvm import here (the adapter does it). Linux only; the seccomp layer needs libseccomp.so.2.
"""

from __future__ import annotations

import ctypes
import errno
import json
import mmap
import os
import signal
import socket
import struct
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.ctypeslib  # noqa: F401 - loaded before a worker's root is emptied (its Python loops use it)

from benchmark import proc

try:  # loaded here, in the judge (and the forkserver that preloads it), not in every worker
    import pyseccomp as _seccomp_lib
except (ImportError, OSError) as _e:  # no libseccomp.so.2: workers refuse to start (fail closed)
    _seccomp_lib = None
    _SECCOMP_MISSING = f"{type(_e).__name__}: {_e}"

ALIGN = 64  # bytes: every view into a pool starts on a 64-byte boundary, as TVM allocates
_LIBC = ctypes.CDLL(None, use_errno=True)
NOBODY = 65534


class WorkerDied(RuntimeError):
    """The worker ended (or broke the protocol) before answering: the candidate crashed."""


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


# --------------------------------------------------------------------------- the input pool
@dataclass
class InputSpec:
    shape: tuple[int, ...]
    dtype: str  # numpy dtype name

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclass
class Pool:
    """One memfd holding, per input, room for the input plus `slack` bytes: a call's input is the window
    of the input's size at a 64-byte-aligned offset into it. The judge writes (`fill`); workers map it
    read-only. Offsets are drawn per call, so every call of a request sees inputs at its own addresses,
    and the pool is refilled with fresh contents before every request."""

    specs: list[InputSpec]
    slack: int
    fd: int = -1
    starts: list[int] = field(default_factory=list)
    caps: list[int] = field(default_factory=list)
    size: int = 0
    _mm: mmap.mmap | None = None

    max_calls: int = 1  # calls one request may make: the request area holds their offsets
    req_fd: int = -1
    _req: mmap.mmap | None = None

    def __post_init__(self) -> None:
        self.slack = _align(max(ALIGN, self.slack))
        self.max_calls = max(1, min(int(self.max_calls), self.positions))
        # the offsets of a request's calls, written by the judge before its clock starts (binary, so no
        # encoding of thousands of numbers is timed), mapped read-only by the workers
        self.req_fd = os.memfd_create("leka-requests", os.MFD_CLOEXEC)
        os.ftruncate(self.req_fd, max(8, 8 * self.max_calls * max(1, len(self.specs))))
        pos = 0
        for s in self.specs:
            self.starts.append(pos)
            cap = _align(max(s.nbytes, 1)) + self.slack
            self.caps.append(cap)
            pos += cap
        self.size = max(pos, ALIGN)
        self.fd = os.memfd_create("leka-inputs", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, self.size)

    @property
    def positions(self) -> int:
        """Distinct window offsets per input."""
        return self.slack // ALIGN + 1

    def map_rw(self) -> None:
        """The judge's writable mappings, made after the workers are forked (they never inherit them)."""
        if self._mm is None:
            self._mm = mmap.mmap(self.fd, self.size)
            self._req = mmap.mmap(self.req_fd, max(8, 8 * self.max_calls * max(1, len(self.specs))))

    def write_offsets(self, flat: Sequence[int]) -> None:
        assert self._req is not None
        a = np.frombuffer(self._req, dtype=np.int64, count=len(flat))
        a[:] = flat

    def region(self, i: int) -> np.ndarray:
        """Input i's whole pool as elements of its dtype (the judge's writable view)."""
        assert self._mm is not None
        s = self.specs[i]
        item = np.dtype(s.dtype).itemsize
        return np.frombuffer(self._mm, dtype=s.dtype, count=self.caps[i] // item, offset=self.starts[i])

    def window(self, i: int, byte_offset: int) -> np.ndarray:
        s = self.specs[i]
        item = np.dtype(s.dtype).itemsize
        return self.region(i)[byte_offset // item: byte_offset // item + s.numel].reshape(s.shape)

    def fill(self, make: Callable[[int], Sequence[np.ndarray]], seed: int, slack_seed: int) -> None:
        """Input i's pool from the task's own input distribution: `make(seed)`'s input i first (the
        window at offset 0 is exactly that seed's input), then the rest of the pool drawn from the
        values of `make(slack_seed)`'s input i (with replacement, seeded by slack_seed): a window at any
        offset holds values of the input's distribution, and no two windows share their contents."""
        first, other = make(seed), make(slack_seed)
        rng = np.random.default_rng(slack_seed)
        for i, (a, b) in enumerate(zip(first, other, strict=True)):
            reg = self.region(i)
            flat = np.ascontiguousarray(a, dtype=self.specs[i].dtype).reshape(-1)
            reg[:flat.size] = flat
            rest = reg.size - flat.size
            if rest > 0:
                src = np.ascontiguousarray(b, dtype=self.specs[i].dtype).reshape(-1)
                if src.size == 0:
                    continue
                if src.size >= rest:
                    reg[flat.size:] = src[:rest]
                else:
                    reg[flat.size:] = src[rng.integers(0, src.size, size=rest)]

    def close(self) -> None:
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:  # numpy views still alive: the mapping goes with the process
                pass
            self._mm = None
        if self._req is not None:
            try:
                self._req.close()
            except BufferError:
                pass
            self._req = None
        for name in ("fd", "req_fd"):
            if getattr(self, name) >= 0:
                os.close(getattr(self, name))
                setattr(self, name, -1)


# --------------------------------------------------------------------------- framing (JSON only)
def _send(sock: socket.socket, obj: Any) -> None:
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


MAX_MESSAGE = 64 << 20
START_TIMEOUT_S = 120.0  # a worker's setup (warm-up, filter) takes well under a second


def _recv(sock: socket.socket) -> Any:
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
        got = _LIBC.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if got <= 0:
            e = ctypes.get_errno()
            raise WorkerDied(f"reading the worker's output at {addr:#x} (+{done}): {os.strerror(e)}")
        done += got
    return out


# --------------------------------------------------------------------------- the judge's handle
@dataclass
class Calls:
    """What one request answered: per call, its outputs' (address, bytes)."""

    outputs: list[list[Out]]
    seconds: float  # the judge's clock around the request (send to answer)


class SandboxWorker:
    """A forked worker serving `run` / `profile` requests; `stop()`ped between them."""

    def __init__(self, pid: int, sock: socket.socket, role: str, n_outputs: int, layers: list[str]):
        if pid <= 0 and type(self) is SandboxWorker:
            raise ValueError(f"a worker's pid is positive, not {pid}: kill(0 or -1) signals whole groups")
        self.pid, self.sock, self.role = pid, sock, role
        self.n_outputs = n_outputs
        self.layers = layers
        self.exit_note: str | None = None
        self.pool: Pool | None = None
        self.results_addr = 0  # where the worker writes its outputs' records (it says so at its start)
        self.threads = 0  # threads the worker had when its filter closed (its own report)
        self._stopped = True

    # the worker runs only while it serves a request: stopped before and after
    def _cont(self) -> None:
        if self._stopped:
            os.kill(self.pid, signal.SIGCONT)
            self._stopped = False

    def _stop(self) -> None:
        if self._stopped:
            return
        try:
            os.kill(self.pid, signal.SIGSTOP)
        except ProcessLookupError:
            self._died()
        info = os.waitid(os.P_PID, self.pid, os.WSTOPPED | os.WEXITED)
        if info is None or info.si_code in (os.CLD_EXITED, os.CLD_KILLED, os.CLD_DUMPED):
            self._died(info)
        self._stopped = True

    def _died(self, info: Any = None) -> None:
        if info is None:
            try:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG)
            except OSError:  # reaped already, or not a child
                info = None
        how = "without an answer"
        if info is not None and info.si_code == os.CLD_EXITED:
            how = f"with exit code {info.si_status} without the judge's handshake"
        elif info is not None and info.si_code in (os.CLD_KILLED, os.CLD_DUMPED):
            how = f"killed by signal {signal.Signals(info.si_status).name}"
        self.exit_note = how
        raise WorkerDied(f"the {self.role}'s sandboxed worker died ({how})")

    def _ask(self, msg: dict[str, Any]) -> tuple[dict[str, Any], float]:
        data = json.dumps(msg, separators=(",", ":")).encode()
        frame = struct.pack("<Q", len(data)) + data  # encoded before the clock starts
        self._cont()
        t0 = time.perf_counter()
        try:
            self.sock.sendall(frame)
            reply = _recv(self.sock)
        except (OSError, WorkerDied):
            self._stopped = True  # dead or dying: nothing to stop
            self._reap()
            raise
        t = time.perf_counter() - t0
        failed = isinstance(reply, dict) and reply.get("error") is not None
        try:
            self._stop()
        except WorkerDied:
            if not failed:  # an error answer may be its last words (the fault handler's)
                raise
        if not isinstance(reply, dict):
            raise WorkerDied("an answer out of protocol")
        if failed:
            raise WorkerError(str(reply["error"])[:2000], reply.get("error_kind"))
        return reply, t

    def _reap(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:  # blocking: it is dead or dying, and how it died (SIGSEGV before our SIGKILL) is the verdict
            info = os.waitid(os.P_PID, self.pid, os.WEXITED)
        except OSError:
            info = None
        self._died(info)

    def run(self, offsets: Sequence[Sequence[int]]) -> Calls:
        """One request: call c on inputs at byte offsets `offsets[c]` (one per input). The offsets go
        into the request area and the outputs' records are read from the worker afterwards, both
        outside the timed request (which carries only the call count)."""
        if self.pool is None or len(offsets) > self.pool.max_calls:
            raise ValueError(f"{len(offsets)} calls in one request, over the pool's {getattr(self.pool, 'max_calls', 0)}")
        self.pool.write_offsets([int(o) for row in offsets for o in row])
        reply, t = self._ask({"op": "run", "n": len(offsets)})
        got = reply.get("got")
        if not isinstance(got, int) or got < 0 or got > RECORD * self.n_outputs * len(offsets) + RECORD:
            raise WorkerDied(f"an answer out of protocol ({got!r} result numbers)")
        raw = np.frombuffer(read_memory(self.pid, self.results_addr, 8 * got), dtype=np.int64).tolist() \
            if got else []
        n_out = self.n_outputs
        if len(raw) % RECORD:
            raise WorkerDied(f"an answer out of protocol ({len(raw)} result numbers)")
        if len(raw) != RECORD * n_out * len(offsets):
            raise ShapeMismatch(f"candidate returned {len(raw) // RECORD // max(1, len(offsets))} output(s) a call, "
                                f"reference {n_out}")
        outs = []
        for c in range(len(offsets)):
            row = []
            for k in range(n_out):
                r = raw[RECORD * (c * n_out + k): RECORD * (c * n_out + k + 1)]
                ndim = min(max(r[3], 0), 8)
                row.append(Out(addr=r[0], nbytes=r[1], dtype=_dtype_name(r[2]), shape=tuple(r[4:4 + ndim])))
            outs.append(row)
        return Calls(outputs=outs, seconds=t)

    def state(self) -> str | None:
        """What process-wide settings the worker's calls changed (its own guard's report), or None."""
        reply, _ = self._ask({"op": "state"})
        ps = reply.get("process_state")
        return str(ps)[:1000] if ps else None

    def read_outputs(self, call: list[Out], like: Sequence[tuple[tuple[int, ...], str]]) -> list[np.ndarray]:
        """One call's outputs, read from the (stopped) worker's memory, as arrays of the expected shapes
        and dtypes; a shape, dtype or size that differs is a shape error of the candidate."""
        check_like(call, like)
        return [np.frombuffer(read_memory(self.pid, o.addr, o.nbytes), dtype=d).reshape(s)
                for o, (s, d) in zip(call, like, strict=True)]

    def profile(self, offsets: Sequence[int], repeat: int) -> tuple[list[dict], float]:
        reply, _ = self._ask({"op": "profile", "offsets": [int(o) for o in offsets], "repeat": int(repeat)})
        rows, total = reply.get("rows"), reply.get("total")
        if not isinstance(rows, list) or not isinstance(total, (int, float)):
            raise WorkerDied("a profile answer out of protocol")
        clean = []
        for r in rows[:10_000]:  # advice, not a verdict: kept only where well-formed
            if isinstance(r, dict) and isinstance(r.get("name"), str) and isinstance(r.get("seconds"), (int, float)) \
                    and isinstance(r.get("calls"), int):
                clean.append({"name": r["name"][:200], "seconds": float(r["seconds"]), "calls": int(r["calls"])})
        return clean, float(total)

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


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


# --------------------------------------------------------------------------- starting one
@dataclass
class Served:
    """What the worker process serves, made in the child before the sandbox closes: `call` is the
    window loop (leka/tvm_adapter/call_loop.py), `make_protos(ro_buffer)` the input views over the
    read-only pool, `profile(protos_at_offsets, repeat)` the per-kernel profile (or None)."""

    setup: Callable[[memoryview, Pool], tuple[Callable[..., int], Callable[[Sequence[int], int], Any] | None]]
    n_outputs: int
    threads: int
    sandbox: bool = True  # False: trusted code (torch.compile / ONNX Runtime baselines need files)
    guard: bool = False  # the worker reports process-wide settings its calls changed
    warm: Callable[[], None] | None = None  # thread pools made before the filter closes
    # guard_inputs(lo, hi, fd): a fault in [lo, hi) (the read-only pool) is reported on fd (input_mutated)
    guard_inputs: Callable[[int, int, int], None] | None = None


def start(served: Served, pool: Pool, role: str, data_limit: int | None = None) -> SandboxWorker:
    """Fork a worker (call before the judge maps the pool writable or starts threads of its own)."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    root_dir = _empty_dir() if served.sandbox else None
    judge = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the worker: never returns
        code = 0
        try:
            parent.close()
            _worker_main(child, served, pool, judge, root_dir, data_limit)
        except BaseException:  # noqa: BLE001 - whatever happens, the worker ends here
            code = 70
            try:
                _send(child, {"error": "worker setup: " + traceback.format_exc()[-1500:]})
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)
    child.close()
    w = SandboxWorker(pid, parent, role, served.n_outputs, [])
    w._stopped = False
    parent.settimeout(START_TIMEOUT_S)
    try:
        hello = _recv(parent)
    except (WorkerDied, TimeoutError) as e:
        if isinstance(e, TimeoutError):
            w.exit_note = f"no answer within {START_TIMEOUT_S:g} s of its start"
        w._stopped = True
        try:
            w._reap()
        except WorkerDied as died:
            raise WorkerDied(f"{died} ({w.exit_note})" if isinstance(e, TimeoutError) else str(died)) from e
        raise
    except BaseException:
        w._stopped = True
        w._reap()
        raise
    finally:
        parent.settimeout(None)
        if root_dir:
            try:
                os.rmdir(root_dir)
            except OSError:
                pass
    if hello.get("error"):
        w._stopped = True
        w.close()
        raise WorkerError(str(hello["error"])[:3000])
    w.layers = [str(x) for x in hello.get("layers", [])][:8]
    w.pool = pool
    w.results_addr = int(hello["results"]) if isinstance(hello.get("results"), int) else 0
    w.threads = int(hello.get("threads", 0)) if isinstance(hello.get("threads"), int) else 0
    w._stop()
    return w


def _empty_dir() -> str | None:
    import tempfile

    d = tempfile.mkdtemp(prefix="leka-jail-")
    os.chmod(d, 0o555)
    return d


# --------------------------------------------------------------------------- inside the worker
def _close_fds(keep: set[int]) -> None:
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    keep = keep | {0, 1, 2}
    try:
        fds = [int(x) for x in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 4096))
    for fd in fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _vm_data_bytes() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmData:"):
            return int(line.split()[1]) * 1024
    return 0


def _jail(root_dir: str | None) -> list[str]:
    """An empty root and an unprivileged uid: as root directly, else inside a new user namespace where
    the machine allows one. The layers that held, by name."""
    layers: list[str] = []
    if root_dir is None:
        return layers
    uid, gid = os.geteuid(), os.getegid()
    if uid != 0:
        CLONE_NEWUSER = 0x10000000
        if _LIBC.unshare(CLONE_NEWUSER) != 0:
            return layers  # no user namespaces here: seccomp alone
        try:
            with open("/proc/self/setgroups", "w") as f:
                f.write("deny")
            with open("/proc/self/uid_map", "w") as f:
                f.write(f"0 {uid} 1")
            with open("/proc/self/gid_map", "w") as f:
                f.write(f"0 {gid} 1")
        except OSError:
            return layers
        layers.append("userns")
    os.chroot(root_dir)
    os.chdir("/")
    layers.append("chroot")
    if os.geteuid() == 0 and uid == 0:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
        layers.append("uid nobody")
    return layers


def _limits(data_limit: int | None) -> None:
    import resource

    for lim, val in ((resource.RLIMIT_FSIZE, 0), (resource.RLIMIT_CORE, 0), (resource.RLIMIT_MEMLOCK, 0)):
        try:
            resource.setrlimit(lim, (val, val))
        except (ValueError, OSError):
            pass
    if data_limit:
        try:
            cur = _vm_data_bytes()
            resource.setrlimit(resource.RLIMIT_DATA, (cur + data_limit, cur + data_limit))
        except (ValueError, OSError):
            pass


# What a running kernel needs. Everything else fails with EPERM (an unknown new syscall included).
ALLOWED = (
    "read", "write", "readv", "writev", "recvfrom", "recvmsg", "sendto", "sendmsg", "close", "fstat",
    "lseek", "brk", "munmap", "mremap", "madvise", "futex", "sched_yield", "sched_getaffinity",
    "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid", "clock_gettime",
    "clock_getres", "gettimeofday", "nanosleep", "clock_nanosleep", "rt_sigaction", "rt_sigprocmask",
    "rt_sigreturn", "sigaltstack", "exit", "exit_group", "getrandom", "poll", "ppoll", "select",
    "pselect6", "getrusage", "times", "sysinfo", "uname", "membarrier", "rseq", "restart_syscall",
    "getcpu", "fcntl", "sched_getparam", "sched_getscheduler", "getpriority", "getrlimit", "dup",
)


def _seccomp(sc: Any, own_pid: int) -> None:
    f = sc.SyscallFilter(defaction=sc.ERRNO(errno.EPERM))
    for name in ALLOWED:
        try:
            f.add_rule(sc.ALLOW, name)
        except (RuntimeError, OSError, ValueError):
            pass  # a name this architecture does not have
    prot_exec = 0x4
    # memory may be mapped and protected, never executable (no new code after the filter)
    f.add_rule(sc.ALLOW, "mmap", sc.Arg(2, sc.MASKED_EQ, prot_exec, 0))
    f.add_rule(sc.ALLOW, "mprotect", sc.Arg(2, sc.MASKED_EQ, prot_exec, 0))
    # signals to itself only (abort, raise): never to the judge or the other arm
    f.add_rule(sc.ALLOW, "tgkill", sc.Arg(0, sc.EQ, own_pid))
    f.add_rule(sc.ALLOW, "prlimit64", sc.Arg(2, sc.EQ, 0))  # reading limits, not raising them
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # glibc then tries clone, which fails: no thread
    f.load()


def _warm_openmp(threads: int) -> None:
    """The system OpenMP runtime's pool (L2 kernels link it), made while threads may still be created."""
    try:
        gomp = ctypes.CDLL("libgomp.so.1", mode=os.RTLD_NOLOAD | ctypes.RTLD_GLOBAL)
    except OSError:
        return
    fn_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    noop = fn_t(lambda _p: None)
    try:
        gomp.omp_set_dynamic(0)
        gomp.GOMP_parallel(noop, None, ctypes.c_uint(threads), ctypes.c_uint(0))
    except AttributeError:
        pass


def _worker_main(sock: socket.socket, served: Served, pool: Pool, judge: int, root_dir: str | None,
                 data_limit: int | None) -> None:
    proc.die_with_parent()
    if os.getppid() != judge:
        os._exit(71)
    ro_fd = os.open(f"/proc/self/fd/{pool.fd}", os.O_RDONLY)
    ro = mmap.mmap(ro_fd, pool.size, prot=mmap.PROT_READ)
    os.close(ro_fd)
    req_fd = os.open(f"/proc/self/fd/{pool.req_fd}", os.O_RDONLY)
    req_size = max(8, 8 * pool.max_calls * max(1, len(pool.specs)))
    req = mmap.mmap(req_fd, req_size, prot=mmap.PROT_READ)
    os.close(req_fd)
    offsets = np.frombuffer(req, dtype=np.int64)
    results = np.zeros(RECORD * pool.max_calls * max(1, served.n_outputs) + RECORD, dtype=np.int64)
    keep = {sock.fileno()}
    _close_fds(keep)
    env_keep = {"OMP_NUM_THREADS": str(served.threads), "TVM_NUM_THREADS": str(served.threads),
                "OMP_WAIT_POLICY": "PASSIVE"}
    if served.sandbox:
        os.environ.clear()  # no keys, no paths: nothing of the user's environment
    os.environ.update(env_keep)
    run, profile = served.setup(memoryview(ro), pool)
    if served.guard_inputs is not None:
        lo = int(np.frombuffer(ro, dtype=np.uint8).ctypes.data)
        served.guard_inputs(lo, lo + pool.size, sock.fileno())
    if served.warm is not None:
        served.warm()
    _warm_openmp(served.threads)
    guard = None
    if served.guard:
        from benchmark.process_state import Guard

        guard = Guard(read_proc=False)
    threads_now = len(os.listdir("/proc/self/task"))  # its pools' threads, for the judge's record
    layers: list[str] = []
    if served.sandbox:
        if _seccomp_lib is None:
            raise RuntimeError(f"no seccomp filter can be made here ({_SECCOMP_MISSING}): install libseccomp2 "
                               "and pyseccomp, or set evaluator.sandbox=false to run candidates unsandboxed")
        _limits(data_limit)
        layers = _jail(root_dir)
        _seccomp(_seccomp_lib, os.getpid())
        layers.append("seccomp")
    _send(sock, {"ok": True, "layers": layers, "threads": threads_now, "results": int(results.ctypes.data)})
    _serve(sock, run, profile, guard, offsets, results)


def _serve(sock: socket.socket, run: Callable[..., int], profile: Any, guard: Any, offsets: np.ndarray,
           results: np.ndarray) -> None:
    while True:
        msg = _recv(sock)
        op = msg.get("op")
        try:
            if op == "run":
                n = int(msg["n"])
                got = run(n, offsets.ctypes.data, results.ctypes.data, results.size)
                _send(sock, {"got": int(got)})
            elif op == "state":  # asked apart from `run`: the guard's ~0.1 ms stays out of the timed request
                reply: dict[str, Any] = {"process_state": None}
                if guard is not None:
                    try:
                        guard.check()
                    except Exception as e:  # noqa: BLE001 - ProcessStateChanged: reported, the judge decides
                        reply["process_state"] = str(e)
                _send(sock, reply)
            elif op == "profile":
                rows, total = profile(list(msg["offsets"]), int(msg.get("repeat", 5)))
                _send(sock, {"rows": rows, "total": total})
            elif op == "exit":
                os._exit(0)
            else:
                _send(sock, {"error": f"unknown request {op!r}"})
        except Exception as e:  # noqa: BLE001 - the candidate's runtime error, as data
            lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
            tail = lines[-1] if lines else type(e).__name__
            _send(sock, {"error": f"{type(e).__name__}: {tail}"[:2000]})
