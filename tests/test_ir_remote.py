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


def test_runners_are_a_table_of_kinds():
    from benchmark.judge import runner
    from leka.core.protocols import Runner

    assert sorted(runner.RUNNERS) == ["local", "rpc"]
    local, rpc = runner.create("local", timeout_s=5), runner.create("rpc", timeout_s=5)
    assert type(local) is runner.LocalRunner and type(rpc) is runner.RPCRunner and local.timeout_s == 5
    assert isinstance(local, Runner) and isinstance(rpc, Runner)
    with pytest.raises(ValueError, match=r"unknown runner kind 'ssh'; one of \['local', 'rpc'\]"):
        runner.create("ssh")
    # a job meant for the other kind is refused before any child starts, not run in the wrong place
    with pytest.raises(ValueError, match="local runner cannot run this job.*rpc://h:1/k"):
        local.submit({"device": {"url": "rpc://h:1/k"}})
    with pytest.raises(ValueError, match="rpc runner cannot run this job: it names no device"):
        rpc.submit({"device": None})


def test_the_evaluator_runs_a_board_through_the_rpc_runner(tmp_path):
    """An llvm RPC server behind a tracker is a board: the evaluator picks the rpc runner, whose child
    builds here and checks and times there."""
    from benchmark.judge import Evaluator
    from benchmark.judge.runner import RPCRunner
    from benchmark.task import load_task_file
    from leka.core.config import DeviceConfig, EvaluatorConfig

    task = load_task_file(Path(__file__).parent / "data" / "tiny_task.py")
    with remote.start_tracker() as tr:
        srv = remote.start_server(tracker=(tr.host, tr.port), key="cpu")
        try:
            dev = DeviceConfig(url=f"rpc://{tr.host}:{tr.port}/cpu", request_timeout_s=60)
            ev = Evaluator(EvaluatorConfig(timeout_s=120, timing_budget_s=1.0), cache_dir=str(tmp_path), device=dev)
            res = ev.evaluate(task)
        finally:
            srv.stop()
    assert isinstance(ev.runner, RPCRunner)
    assert res.compiled and res.correct, res.error
    assert res.extra["device"] == dev.url and res.extra["upload_s"] > 0 and res.speedup and res.speedup > 0
