"""RPC path: an llvm RPC server on 127.0.0.1 runs and times an exported candidate (with an L2 kernel)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from benchmark.task import resolve
from leka import ir
from leka import tvm_adapter as A
from leka.ir import remote


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
