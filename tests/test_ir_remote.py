"""RPC path: an llvm RPC server on 127.0.0.1 runs and times an exported candidate (with an L2 kernel)."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmark.task import resolve
from leka import ir
from leka import tvm_adapter as A
from leka.ir import remote

TRACKER_MAGIC = 0x2F271  # tvm.rpc.base.RPC_TRACKER_MAGIC
SUMMARY, REQUEST = 6, 4  # tvm.rpc.base.TrackerCode


def test_rpc_llvm_server_runs_exported_candidate(tmp_path):
    task = resolve(Path(__file__).resolve().parents[1] / "benchmark/examples/mbv2_block.py")
    root = ir.import_root(task)
    c = ir.root_candidate(task, root=root)
    built = ir.build_candidate(c, A.make_target("llvm"), root.params, for_rpc=True)
    lib = ir.export(built, tmp_path / "mbv2_rpc.so")
    x = task.make_inputs(0)[0].numpy()
    with torch.no_grad():
        ref = root.model(torch.from_numpy(x)).numpy()
    with remote.start_server() as srv:
        sess = remote.connect(srv.host, srv.port)
        res = remote.run_remote(sess, lib, [x], backend="llvm", number=2, repeat=3)
    assert len(res.outputs) == 1 and res.outputs[0].shape == ref.shape
    np.testing.assert_allclose(res.outputs[0], ref, atol=1e-4, rtol=1e-4)
    assert res.median_s is not None and res.median_s > 0 and len(res.samples_s) == 3


def _recvall(conn: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def _stuck_tracker(sock: socket.socket, requests: list) -> None:
    """TVM's tracker wire protocol: a board of key `pocl` is free in every summary, but a REQUEST is
    held forever (as the real tracker does when the matched board died before the client connected)."""
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        assert struct.unpack("<i", _recvall(conn, 4))[0] == TRACKER_MAGIC
        conn.sendall(struct.pack("<i", TRACKER_MAGIC))
        try:
            while True:
                (n,) = struct.unpack("<i", _recvall(conn, 4))
                msg = json.loads(_recvall(conn, n))
                if msg[0] == SUMMARY:
                    out = json.dumps([0, {"queue_info": {"pocl": {"free": 1, "pending": 0}}}]).encode()
                    conn.sendall(struct.pack("<i", len(out)) + out)
                elif msg[0] == REQUEST:
                    requests.append(msg)
        except (ConnectionError, OSError):
            conn.close()


def test_tracker_that_never_answers_a_request_times_out():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    requests: list = []
    threading.Thread(target=_stuck_tracker, args=(sock, requests), daemon=True).start()
    port = sock.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="no free device 'pocl'"):
        remote.request("127.0.0.1", port, "pocl", timeout_s=2.0)
    assert time.monotonic() - t0 < 10  # the deadline holds, not the tracker's silence
    assert requests and requests[0][1] == "pocl"
    sock.close()
