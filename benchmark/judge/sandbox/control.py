"""The sandboxed worker: the process a candidate's code runs in (issue 26; docs/threat_model.md).

The evaluation process (the judge, benchmark/judge/job.py) builds the candidate, then forks a worker that
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
loop (leka/tvm_adapter/call_loop.py `window_loop`) makes the calls and keeps the outputs of every call
(or, for diagnostics, of the last `Served.hold`) alive until the next request, so the judge can read
any of them afterwards, chosen after the worker answered. The kernel can write the control socket, so
an answer is bound to its request by a nonce and to its calls by the loop's progress, read back from
the stopped worker (and, in the end, by the check of a call drawn after the answer).

No tvm import here (the adapter does it). Linux only; the seccomp layer needs libseccomp.so.2.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import struct
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmark.judge.sandbox import worker
from benchmark.judge.sandbox.pool import InputSpec, Pool, align  # noqa: F401 - the sandbox's names, re-exported
from benchmark.judge.sandbox.wire import (  # noqa: F401 - the sandbox's names, re-exported for its users
    ALIGN,
    MAX_MESSAGE,
    RECORD,
    START_TIMEOUT_S,
    Deadline,
    DeviceServe,
    Out,
    Served,
    ShapeMismatch,
    WorkerDied,
    WorkerError,
    WorkerTimeout,
    _dtype_name,
    _Fetched,
    _outs,
    check_like,
    cpus,
    dtype_code,
    faults,
    jail_dir,
    placed_record,
    read_memory,
    recv_frame,
    remove_jail_dir,
    send_frame,
)

# --------------------------------------------------------------------------- the judge's handle
_NONCES = random.SystemRandom()

@dataclass
class Calls:
    """What one request answered: per kept call, its outputs' records; `outputs[0]` is call `first`'s
    (the worker keeps the last `hold` calls' outputs, or every call's: first 0)."""

    outputs: Sequence[list[Out]]
    seconds: float  # the judge's clock around the request (send to answer)
    first: int = 0


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
        self.progress_addr = 0  # where its loop writes the request's nonce and the calls made so far
        self.nonce = 0  # the last request's
        self.threads = 0  # threads the worker had when its filter closed (its own report)
        self.placed: dict[str, list[int]] = {}  # its threads' cores where it placed them (evaluator.sandbox_pin)
        self.device = False  # a device worker (CUDA, OpenCL): calls on uploaded slots (Served.device)
        self.hold = 0  # the calls of a request whose outputs the worker keeps: the last `hold` (0: all)
        self._stopped = True
        # the worker's own clock around its last request's calls (untrusted, evaluator.timing_diag only)
        self.worker_s: float | None = None
        self.deadline = Deadline()  # how long an answer may take (evaluator.sandbox_request_*)

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
        # a nonce per request, drawn here: an answer that does not carry it answers another request (one
        # the kernel sent itself, then the loop's own answer read as the next request's)
        self.nonce = _NONCES.getrandbits(62) + 1
        msg = {**msg, "nonce": self.nonce}
        data = json.dumps(msg, separators=(",", ":")).encode()
        frame = struct.pack("<Q", len(data)) + data  # encoded before the clock starts
        limit = self.deadline.limit(msg)
        self._cont()
        t0 = time.perf_counter()
        self.sock.settimeout(limit)
        try:
            self.sock.sendall(frame)
            reply = recv_frame(self.sock)
        except TimeoutError:
            self._stopped = True
            self._overdue(msg, limit)
        except (OSError, WorkerDied):
            self._stopped = True  # dead or dying: nothing to stop
            self._reap()
            raise
        finally:
            self.sock.settimeout(None)
        t = time.perf_counter() - t0
        self.deadline.seen(msg, t)
        failed = isinstance(reply, dict) and reply.get("error") is not None
        try:
            self._stop()
        except WorkerDied:
            if not failed:  # an error answer may be its last words (the fault handler's)
                raise
        if not isinstance(reply, dict):
            raise WorkerDied("an answer out of protocol")
        if failed:  # the fault handler's last words carry no nonce: a failure is the candidate's either way
            raise WorkerError(str(reply["error"])[:2000], reply.get("error_kind"))
        if reply.get("nonce") != self.nonce:
            raise WorkerDied(f"an answer out of protocol (to another request than its {msg.get('op')!r})")
        return reply, t

    def _overdue(self, msg: dict[str, Any], limit: float | None) -> None:
        note = f"no answer to a {msg.get('op')!r} request of {Deadline.calls(msg)} call(s) within {limit or 0:.1f} s"
        try:
            self._reap()
        except WorkerDied:
            pass
        self.exit_note = note
        raise WorkerTimeout(f"the {self.role}'s sandboxed worker (pid {self.pid}) gave {note}: killed")

    def _ran(self, n: int, reply: dict[str, Any]) -> None:
        """The calls ran: the progress its loop wrote, read from the stopped worker after the answer,
        names this request and all n calls. The kernel can write it too; what binds the answer to the
        calls is the check of a call drawn among all of them after the answer, before the worker runs
        again (sandbox_timing), which a kernel that answered early fails."""
        got = np.frombuffer(read_memory(self.pid, self.progress_addr, 16), dtype=np.int64).tolist() \
            if self.progress_addr else None
        if got != [self.nonce, n]:
            raise WorkerDied(f"an answer out of protocol (its loop's progress {got!r}, not this request's {n} calls)")

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
        outside the timed request (which carries only the call count). On a device the windows are
        first uploaded into the worker's slots (untimed), call c runs on slot c, and a call's outputs
        are copied to the host when the judge asks for them (`Calls.outputs[j]`)."""
        if self.pool is None or len(offsets) > self.pool.max_calls:
            raise ValueError(f"{len(offsets)} calls in one request, over the pool's {getattr(self.pool, 'max_calls', 0)}")
        self.pool.write_offsets([int(o) for row in offsets for o in row])
        if self.device:
            self._ask({"op": "upload", "n": len(offsets)})
            reply, t = self._ask({"op": "run", "n": len(offsets)})
            if reply.get("calls") != len(offsets):
                raise WorkerDied(f"an answer out of protocol ({reply.get('calls')!r} calls of {len(offsets)})")
            self._ran(len(offsets), reply)
            return Calls(outputs=_Fetched(self, len(offsets)), seconds=t)
        reply, t = self._ask({"op": "run", "n": len(offsets)})
        self._ran(len(offsets), reply)
        ns = reply.get("ns")
        self.worker_s = ns / 1e9 if isinstance(ns, int) and ns >= 0 else None
        n, n_out = len(offsets), self.n_outputs
        kept = min(n, self.hold) if self.hold > 0 else n
        raw = self._records(reply, RECORD * n_out * kept + RECORD)
        if len(raw) != RECORD * n_out * kept:
            raise ShapeMismatch(f"candidate returned {len(raw) // RECORD // max(1, kept)} output(s) a call, "
                                f"reference {n_out}")
        return Calls(outputs=[_outs(raw[RECORD * n_out * c: RECORD * n_out * (c + 1)]) for c in range(kept)],
                     seconds=t, first=n - kept)

    def _records(self, reply: dict[str, Any], most: int) -> list[int]:
        got = reply.get("got")
        if not isinstance(got, int) or got < 0 or got > most:
            raise WorkerDied(f"an answer out of protocol ({got!r} result numbers)")
        raw = np.frombuffer(read_memory(self.pid, self.results_addr, 8 * got), dtype=np.int64).tolist() \
            if got else []
        if len(raw) % RECORD:
            raise WorkerDied(f"an answer out of protocol ({len(raw)} result numbers)")
        return raw

    def fetch(self, j: int) -> list[Out]:
        """A device worker's call j of its last request: its outputs copied to the worker's host memory."""
        raw = self._records(self._ask({"op": "fetch", "j": int(j)})[0], RECORD * self.n_outputs + RECORD)
        if len(raw) != RECORD * self.n_outputs:
            raise ShapeMismatch(f"candidate returned {len(raw) // RECORD} output(s), reference {self.n_outputs}")
        return _outs(raw)

    def slot_inputs(self, s: int, like: Sequence[tuple[tuple[int, ...], str]]) -> list[np.ndarray]:
        """A device worker's slot s, read back from the device: the inputs its last calls got there."""
        assert self.pool is not None
        raw = self._records(self._ask({"op": "inputs", "s": int(s)})[0], RECORD * len(self.pool.specs) + RECORD)
        return self.read_outputs(_outs(raw), like)

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
        if self.device:
            assert self.pool is not None
            self.pool.write_offsets([int(o) for o in offsets])
            self._ask({"op": "upload", "n": 1})
            reply, _ = self._ask({"op": "profile", "slot": 0, "repeat": int(repeat)})
        else:
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



# --------------------------------------------------------------------------- starting one

def start(served: Served, pool: Pool, role: str, data_limit: int | None = None,
          deadline: Deadline | None = None) -> SandboxWorker:
    """Fork a worker (call before the judge maps the pool writable or starts threads of its own);
    `deadline`: its answers' bound (a fresh one per worker: it learns that worker's per-call time)."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    root_dir = jail_dir(served.l2_libs) if served.sandbox else None
    judge = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the worker: never returns
        code = 0
        try:
            parent.close()
            worker.main(child, served, pool, judge, root_dir, data_limit)
        except BaseException:  # noqa: BLE001 - whatever happens, the worker ends here
            code = 70
            try:
                send_frame(child, {"error": "worker setup: " + traceback.format_exc()[-1500:]})
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)
    child.close()
    w = SandboxWorker(pid, parent, role, served.n_outputs, [])
    if deadline is not None:
        w.deadline = deadline
    w._stopped = False
    parent.settimeout(START_TIMEOUT_S)
    try:
        hello = recv_frame(parent)
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
        remove_jail_dir(root_dir)
    if hello.get("error"):
        w._stopped = True
        w.close()
        raise WorkerError(str(hello["error"])[:3000])
    w.layers = [str(x) for x in hello.get("layers", [])][:8]
    w.pool = pool
    w.results_addr = int(hello["results"]) if isinstance(hello.get("results"), int) else 0
    w.progress_addr = int(hello["progress"]) if isinstance(hello.get("progress"), int) else 0
    w.threads = int(hello.get("threads", 0)) if isinstance(hello.get("threads"), int) else 0
    w.placed = placed_record(hello.get("placed"))
    w.device = served.device
    w.hold = 0 if served.device else max(0, int(served.hold))
    w._stop()
    return w
