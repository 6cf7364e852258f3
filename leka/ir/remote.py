"""TVM RPC: run and time an exported candidate on another device (a board with OpenCL, a phone, ...).

Local tests start an llvm server (and optionally a tracker) on 127.0.0.1; a real board runs
`python -m tvm.exec.rpc_server --tracker HOST:9190 --key KEY` with a TVM runtime built for it (see
leka/README.md). The module is built with `build_candidate(..., for_rpc=True)` so that `main` returns
a tensor, not a 1-tuple (RPC cannot index a remote tuple; see docs/DESIGN.md, "Pinned facts"), exported, uploaded, loaded
into a remote Relax VM, run and timed there.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from leka import tvm_adapter as A
from leka.core.proc import die_with_parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalProcess:
    proc: subprocess.Popen
    host: str
    port: int
    log: Any = None  # the file its stderr goes to (_spawn)

    def stop(self) -> None:
        if self.log is not None:
            self.log.close()
        # the server forks workers into its own session: end that group, which we started
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def _spawn(args: list[str], host: str, port: int) -> LocalProcess:
    import tempfile

    # its stderr goes to a file, read back when it dies at start (a module its Python lacks, a port taken)
    log = tempfile.TemporaryFile()
    p = subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.DEVNULL, stderr=log,
                         start_new_session=True, preexec_fn=die_with_parent)
    return LocalProcess(p, host, port, log)


def _started(lp: LocalProcess, what: str, timeout_s: float = 30.0) -> LocalProcess:
    """`lp` once it listens on its port; if it exits first, its own last words as the error."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if lp.proc.poll() is not None:
            lp.log.seek(0)
            tail = lp.log.read()[-1500:]
            lp.stop()
            last = (tail.decode(errors="replace").strip().splitlines() or ["(no output)"])[-1]
            raise RuntimeError(f"the {what} exited at start (code {lp.proc.returncode}): {last}")
        try:
            with socket.create_connection((lp.host, lp.port), timeout=1.0):
                return lp
        except OSError:
            time.sleep(0.2)
    return lp


def start_tracker(host: str = "127.0.0.1", port: int | None = None) -> LocalProcess:
    port = port or free_port()
    lp = _spawn(["tvm.exec.rpc_tracker", "--host", host, "--port", str(port), "--port-end", str(port + 1)],
                host, port)
    return _started(lp, f"RPC tracker ({sys.executable} -m tvm.exec.rpc_tracker)")


def start_server(host: str = "127.0.0.1", port: int | None = None, tracker: tuple[str, int] | None = None,
                 key: str = "", load_library: str | Path | None = None) -> LocalProcess:
    """`load_library`: e.g. the OpenCL plugin (leka/tvm_adapter/opencl_plugin.py), which makes the server an OpenCL board."""
    port = port or free_port()
    # --port-end defaults to 9199: a port above it needs an explicit end or binding fails
    args = ["tvm.exec.rpc_server", "--host", host, "--port", str(port), "--port-end", str(port + 1)]
    if load_library:
        args += ["--load-library", str(load_library)]
    if tracker:
        args += ["--tracker", f"{tracker[0]}:{tracker[1]}", "--key", key or "local"]
    return _spawn(args, host, port)


def connect(host: str, port: int, timeout_s: float = 60.0):
    """Connect straight to a server (no tracker), retrying while it starts."""
    deadline = time.monotonic() + timeout_s
    err: Exception | None = None
    while time.monotonic() < deadline:
        try:
            return A.rpc_connect(host, port)
        except Exception as e:  # noqa: BLE001 - not up yet
            err = e
            time.sleep(0.5)
    raise TimeoutError(f"no RPC server at {host}:{port} after {timeout_s:.0f}s: {err}")


def request(tracker_host: str, tracker_port: int, key: str, timeout_s: float = 60.0, session_timeout: int = 0):
    """A session on a free device registered under `key` at the tracker, waiting until one is up
    (`session_timeout`: seconds after which the tracker takes the device back; 0 = never)."""
    deadline = time.monotonic() + timeout_s
    err: Exception | None = None
    while time.monotonic() < deadline:
        try:
            summary = A.rpc_tracker_summary(tracker_host, tracker_port)
            if summary.get("queue_info", {}).get(key, {}).get("free", 0):
                return A.rpc_request(tracker_host, tracker_port, key, session_timeout=session_timeout,
                                     timeout_s=deadline - time.monotonic())
        except Exception as e:  # noqa: BLE001
            err = e
        time.sleep(0.5)
    raise TimeoutError(f"no free device {key!r} at tracker {tracker_host}:{tracker_port}: {err}")


@dataclass
class RemoteResult:
    outputs: list[np.ndarray]
    median_s: float | None = None
    samples_s: list[float] = field(default_factory=list)
    upload_s: float = 0.0


def run_remote(remote, lib_path: str | Path, inputs: list[np.ndarray], backend: str = "llvm",
               number: int = 5, repeat: int = 5) -> RemoteResult:
    """Upload an exported library, run `main` on `inputs` remotely, time it there (compile excluded)."""
    t0 = time.perf_counter()
    remote.upload(str(lib_path))
    vm, dev = A.remote_vm(remote, Path(lib_path).name, backend)
    up = time.perf_counter() - t0
    args = [A.tensor_on(x, dev) for x in inputs]
    out = vm["main"](*args)
    outs = [o.numpy() for o in A.flatten_outputs(out)] if not hasattr(out, "numpy") else [out.numpy()]
    res: Any = None
    if repeat > 0:
        res = vm.time_evaluator("main", dev, number=number, repeat=repeat)(*args)
    return RemoteResult(outputs=outs, median_s=float(res.median) if res is not None else None,
                        samples_s=[float(x) for x in res.results] if res is not None else [], upload_s=up)
