"""L1 / L2 edits, carry-forward, bad edits as data, export to a deployable .so, bounded views."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmark.task import resolve
from experiments import ir_layers_demo as D
from leka import ir
from leka import tvm_adapter as A
from leka.core.types import Edit
from leka.ir import edits, views
from leka.ir import l2 as L2

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def folded(tmp_path_factory):
    """mbv2 with BN folded: three fused 1x1/dw conv kernels."""
    task = resolve(ROOT / "benchmark/examples/mbv2_block.py")
    root = ir.import_root(task)
    wd = tmp_path_factory.mktemp("wd")
    out = edits.apply_edit(ir.root_candidate(task, root=root), Edit(level="L0", kind="pass",
                           payload={"name": "fold_batchnorm"}), workdir=wd, root_params=root.params)
    assert out.error is None, out.error
    x = task.make_inputs(0)[0].numpy()
    with torch.no_grad():
        ref = root.model(torch.from_numpy(x)).numpy()
    return out.candidate, x, ref, wd


def _run(c, x, l2_dir=None):
    built = ir.load_l2(ir.build_candidate(c, A.make_target("llvm"), l2_dir=l2_dir))  # run in-process
    return built, A.VMRunner(built.executable, A.device_for("llvm"))(x)[0]


def _names(c):
    t = A.make_target("llvm")
    return D.pick(c, t, None, D.is_expand_conv), D.pick(c, t, None, D.is_project_conv)


def test_l1_l2_carry_and_export(folded, tmp_path):
    c, x, ref, wd = folded
    expand, project = _names(c)
    o1 = edits.apply_edit(c, Edit(level="L1", kind="trace", target=expand,
                                  payload={"trace": D.cpu_conv1x1_trace(16)}), workdir=wd)
    assert o1.error is None, o1.error
    built, y = _run(o1.candidate, x)
    assert built.applied_l1 and np.allclose(y, ref, atol=1e-4, rtol=1e-4)
    o2 = edits.apply_edit(o1.candidate, Edit(level="L2", kind="source", target=project, payload={
        "language": "cpp", "text": D.cpp_project_conv("t_pw", 32, 128, 784), "entry": "t_pw"}), workdir=wd)
    assert o2.error is None, o2.error
    built, y = _run(o2.candidate, x, wd / "l2")
    assert built.applied_l2 and built.extra_modules and np.allclose(y, ref, atol=1e-4, rtol=1e-4)
    # the exported library carries the C++ object and runs in a fresh process
    so = ir.export(built, tmp_path / "m.so")
    np.save(tmp_path / "x.npy", x)
    code = ("import numpy as np, tvm; from tvm import relax; import sys; d=sys.argv[1];"
            "vm=relax.VirtualMachine(tvm.runtime.load_module(d+'/m.so'), tvm.cpu());"
            "print(float(vm['main'](tvm.runtime.tensor(np.load(d+'/x.npy')))[0].numpy().sum()))")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert abs(float(r.stdout.strip()) - float(y.sum())) < 1e-2
    assert Path(so).exists()
    # an L0 edit on top: the expand conv changes (clip), the projection conv does not
    o3 = edits.apply_edit(o2.candidate, Edit(level="L0", kind="pass", payload={"name": "clip_to_relu_min"}),
                          workdir=wd)
    assert o3.error is None, o3.error
    assert [s.split(":")[0] for s in o3.carried] == ["L2"]
    assert [s.split(":")[0] for s in o3.invalidated] == ["L1"]
    assert o3.candidate.invalidated == o3.invalidated
    _, y = _run(o3.candidate, x, wd / "l2")
    assert np.allclose(y, ref, atol=1e-4, rtol=1e-4)


def test_tir_text_edit_round_trip(folded):
    c, x, ref, wd = folded
    expand, _ = _names(c)
    tir = views.tir_view(c, expand, "llvm", max_chars=10**6)
    out = edits.apply_edit(c, Edit(level="L1", kind="tir_text", target=expand, payload={"text": tir}), workdir=wd)
    assert out.error is None, out.error
    _, y = _run(out.candidate, x)
    assert np.allclose(y, ref, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("edit,needle", [
    (Edit(level="L0", kind="relax_text", payload={"text": "@R.function\ndef main(x: R.Tensor((1,), 'float32')):\n  return ("}),
     "does not parse"),
    (Edit(level="L1", kind="trace", target="EXPAND", payload={"trace": [{"prim": "get_sblock", "args": ["nope"]}]}),
     "Cannot find a block"),
    (Edit(level="L1", kind="trace", target="EXPAND", payload={"trace": [{"prim": "split", "args": [3, [None, 4]]}]}),
     "step 0 (split"),
    (Edit(level="L1", kind="trace", target="EXPAND", payload={"trace": [
        {"prim": "get_sblock", "args": ["conv2d_nchw"], "out": ["b"]},
        {"prim": "get_loops", "args": ["b"], "out": ["n", "f", "y", "x", "rc", "ry", "rx"]},
        {"prim": "parallel", "args": ["rc"]}]}), "step 2 (parallel"),
    (Edit(level="L1", kind="trace", target="no_such_func", payload={"trace": [{"prim": "get_sblock", "args": ["a"]}]}),
     "no PrimFunc 'no_such_func'"),
    (Edit(level="L1", kind="trace", target="EXPAND", payload={"trace": [{"prim": "exec", "args": ["rm -rf /"]}]}),
     "not allowed"),
    (Edit(level="L1", kind="tir_text", target="EXPAND", payload={"text": "@T.prim_func\ndef main(a: T.Buffer((4,), 'float32')):\n    a[0] = T.float32(1)"}),
     "buffer parameters differ"),
    (Edit(level="L2", kind="source", target="PROJECT", payload={"language": "cpp", "entry": "k",
                                                                 "text": 'extern "C" int k(float* a) { return oops; }'}),
     "error"),
    (Edit(level="L2", kind="source", target="PROJECT", payload={"language": "cpp", "entry": "missing",
                                                                 "text": 'extern "C" int k(float* a) { return 0; }'}),
     "does not export the symbol 'missing'"),
    (Edit(level="L2", kind="source", target="PROJECT", payload={"language": "cuda", "text": "x", "entry": "k"}),
     "does not fit backend llvm"),
    (Edit(level="L0", kind="nonsense"), "unknown edit"),
])
def test_bad_edits_are_errors(folded, edit, needle):
    c, _, _, wd = folded
    expand, project = _names(c)
    tgt = {"EXPAND": expand, "PROJECT": project}.get(edit.target or "", edit.target)
    out = edits.apply_edit(c, edit.model_copy(update={"target": tgt}), workdir=wd)
    assert out.candidate is None
    assert needle in out.error, out.error


def test_relax_text_edit_and_param_check(folded):
    c, x, ref, wd = folded
    text = c.relax_text.replace("R.clip(", "R.clip(", 1)
    same = edits.apply_edit(c, Edit(level="L0", kind="relax_text", payload={"text": text}), workdir=wd)
    assert same.candidate is None and "equivalent" in same.error
    renamed = c.relax_text.replace("c0", "cz")
    bad = edits.apply_edit(c, Edit(level="L0", kind="relax_text", payload={"text": renamed}), workdir=wd)
    assert bad.candidate is None and "cz" in bad.error
    # a real textual edit: relu6 as minimum(relu(x), 6)
    import re
    new_text, n = re.subn(r"R\.clip\((\w+), 0, 6\)", r'R.minimum(R.nn.relu(\1), R.const(6.0, "float32"))',
                          c.relax_text)
    assert n > 0, c.relax_text[:2000]
    ok = edits.apply_edit(c, Edit(level="L0", kind="relax_text", payload={"text": new_text}), workdir=wd)
    assert ok.error is None, ok.error
    _, y = _run(ok.candidate, x)
    assert np.allclose(y, ref, atol=1e-4, rtol=1e-4)


def test_views_are_bounded(folded):
    c, _, _, _ = folded
    expand, _ = _names(c)
    rv = views.relax_view(c, max_chars=400)
    assert len(rv) <= 400 and "lines elided" in rv
    tv = views.tir_view(c, expand, "llvm", max_chars=1500)
    assert len(tv) <= 1500 and "lines elided" in tv
    sv = views.source_view(c, expand, "llvm", max_chars=3000)
    assert "define" in sv and len(sv) <= 3000
    rows = views.kernel_table(c, "llvm")
    assert {r["name"] for r in rows} >= {expand} and all(len(r["l1_key"]) == 16 for r in rows)


def test_cuda_l1_l2_and_nvcc_rejects(folded, tmp_path):
    c, _, _, _ = folded
    cc = c.model_copy(update={"backend": "cuda"})
    t = A.make_target("cuda")
    expand = D.pick(cc, t, None, D.is_expand_conv)
    o1 = edits.apply_edit(cc, Edit(level="L1", kind="trace", target=expand,
                                   payload={"trace": D.gpu_conv1x1_trace()}), workdir=tmp_path, build_check=False)
    assert o1.error is None, o1.error
    unbound = edits.apply_edit(cc, Edit(level="L1", kind="trace", target=expand, payload={"trace": [
        {"prim": "get_sblock", "args": ["pad_temp"], "out": ["p"]}, {"prim": "compute_inline", "args": ["p"]}]}),
        workdir=tmp_path, build_check=False)
    assert unbound.candidate is None and "does not compile for cuda" in unbound.error
    sig = A.buffer_signature(ir.lowered_module(o1.candidate, t)[0][expand])
    good = D.cuda_kernel(o1.candidate, t, None, expand, D.cuda_conv1x1_body(sig))
    built = ir.build_candidate(o1.candidate.model_copy(update={"l2": {
        A.structural_hash(ir.lowered_module(o1.candidate, t)[0][expand]):
        ir.L2Entry(kernel=expand, language="cuda", text=good, entry=f"{expand}_kernel")}}), t)
    assert "__ldg" in A.runtime_source(built.executable)
    if not L2.nvcc_available():
        pytest.skip("no nvcc")
    bad = edits.apply_edit(o1.candidate, Edit(level="L2", kind="source", target=expand, payload={
        "language": "cuda", "text": good.replace("__ldg(", "__no_such_intrinsic(", 1), "entry": f"{expand}_kernel"}),
        workdir=tmp_path, build_check=False)
    assert bad.candidate is None and "nvcc rejects" in bad.error and "__no_such_intrinsic" in bad.error


def test_apply_is_memoised_per_candidate_and_edit(folded):
    """An LLM edit is applied by its agent's legality check and again by the graph: the second apply
    must come from the memo, and an outcome memoised without a build check must not answer a call
    that asks for one."""
    c, _, _, wd = folded
    expand, _ = _names(c)
    e = Edit(level="L1", kind="trace", target=expand, payload={"trace": D.cpu_conv1x1_trace(16)}, rationale="a")
    edits._MEMO.clear()  # an earlier test applied this very edit
    unchecked = edits.apply_edit(c, e, workdir=wd, build_check=False)
    key = edits._memo_key(c, e, wd, None)
    assert unchecked.error is None and edits._MEMO[key][1] is False
    checked = edits.apply_edit(c, e, workdir=wd)
    assert edits._MEMO[key][1] is True and checked.candidate.digest == unchecked.candidate.digest
    # the rationale is not part of the key; what callers do to an outcome does not reach the memo
    again = edits.apply_edit(c, e.model_copy(update={"rationale": "other words"}), workdir=wd, build_check=False)
    assert again.candidate.digest == checked.candidate.digest
    again.carried.append("not-a-key")
    assert "not-a-key" not in edits._MEMO[key][0].carried
    other = e.model_copy(update={"payload": {"trace": D.cpu_conv1x1_trace(8)}})
    assert edits._memo_key(c, other, wd, None) != key


def test_export_drops_tvm_scope_saving_noise_only(tmp_path, capfd):
    """Exporting an executable that already ran in a VM makes TVM 0.27 log one "Scope Saving"
    warning per kernel; `ir.export` drops those lines and nothing else."""
    task = resolve(ROOT / "benchmark/examples/mbv2_block.py")
    root = ir.import_root(task)
    built = ir.build_candidate(ir.root_candidate(task, root=root), A.make_target("llvm"), root.params)
    A.VMRunner(built.executable, A.device_for("llvm"))
    capfd.readouterr()
    built.executable.export_library(str(tmp_path / "raw.so"))
    assert "Scope Saving" in capfd.readouterr().err  # the noise is real
    ir.export(built, tmp_path / "best.so")
    assert "Scope Saving" not in capfd.readouterr().err
    assert (tmp_path / "best.so").stat().st_size > 0
    print("after export", file=sys.stderr)  # fd 2 is restored
    assert "after export" in capfd.readouterr().err


def test_kernel_cache_builds_only_the_edited_kernel(folded, tmp_path):
    """A candidate one L1 edit away from a built one compiles that kernel only; every output matches
    tvm.compile's, and the profiler's assembly is there for the cached kernels too."""
    c, x, ref, wd = folded
    expand, _ = _names(c)
    t, kc = A.make_target("llvm"), str(tmp_path / "kernels")
    first = ir.build_candidate(c, t, kernel_cache=kc)
    n = first.kernels["built"]
    assert n >= 3 and first.kernels["cached"] == 0
    again = ir.build_candidate(c, t, kernel_cache=kc)
    assert again.kernels == {"cached": n, "built": 0}
    o1 = edits.apply_edit(c, Edit(level="L1", kind="trace", target=expand,
                                  payload={"trace": D.cpu_conv1x1_trace(16)}), workdir=wd)
    edited = ir.build_candidate(o1.candidate, t, kernel_cache=kc)
    assert edited.kernels == {"cached": n - 1, "built": 1}
    for b in (first, again, edited):
        y = A.VMRunner(b.executable, A.device_for("llvm"))(x)[0]
        assert np.allclose(y, ref, atol=1e-4, rtol=1e-4)
    assert expand in A.kernel_asm(edited.kernel_libs)  # the edited kernel's label in its assembly
    plain = ir.build_candidate(o1.candidate, t)
    assert not plain.kernels and not plain.kernel_libs  # no cache given: tvm.compile, as before
