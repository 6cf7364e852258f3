"""L0 passes: Before/Expected structural equality where the pass is textual, and numerics + op counts
on the example tasks for the passes that need bound constants (BN folding, layouts, 1x1 -> matmul)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from benchmark.task import resolve
from leka import ir
from leka import tvm_adapter as A
from leka.core.types import Edit
from leka.ir import edits

ROOT = Path(__file__).resolve().parents[1]
CLIP_BEFORE = """
# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((1, 8, 4, 4), dtype="float32")) -> R.Tensor((1, 8, 4, 4), dtype="float32"):
    with R.dataflow():
        y = R.clip(x, 0, 6)
        R.output(y)
    return y
"""
CLIP_EXPECTED = """
# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((1, 8, 4, 4), dtype="float32")) -> R.Tensor((1, 8, 4, 4), dtype="float32"):
    with R.dataflow():
        y = R.minimum(R.nn.relu(x), R.const(6.0, "float32"))
        R.output(y)
    return y
"""
DCE_BEFORE = """
# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
    with R.dataflow():
        unused = R.multiply(x, x)
        y = R.add(x, x)
        R.output(y)
    return y
"""
DCE_EXPECTED = """
# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
    with R.dataflow():
        y = R.add(x, x)
        R.output(y)
    return y
"""
CSE_BEFORE = """
# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
    with R.dataflow():
        a = R.exp(x)
        b = R.exp(x)
        y = R.add(a, b)
        R.output(y)
    return y
"""
CSE_EXPECTED = """
# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
    with R.dataflow():
        a = R.exp(x)
        y = R.add(a, a)
        R.output(y)
    return y
"""

POW_BEFORE = """
# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((2, 8), dtype="float32")) -> R.Tensor((2, 8), dtype="float32"):
    with R.dataflow():
        p = R.power(x, R.const(2.0, "float32"))
        q = R.power(p, R.const(0.5, "float32"))
        r = R.power(q, R.const(3.0, "float32"))
        R.output(r)
    return r
"""
POW_EXPECTED = """
# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((2, 8), dtype="float32")) -> R.Tensor((2, 8), dtype="float32"):
    with R.dataflow():
        p = R.multiply(x, x)
        q = R.sqrt(p)
        r = R.power(q, R.const(3.0, "float32"))
        R.output(r)
    return r
"""
FOLD_BEFORE = """
# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((), dtype="float32")) -> R.Tensor((), dtype="float32"):
    with R.dataflow():
        c = R.add(R.const(1.5, "float32"), R.const(2.0, "float32"))
        y = R.multiply(x, c)
        R.output(y)
    return y
"""
FOLD_EXPECTED = """
# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((), dtype="float32")) -> R.Tensor((), dtype="float32"):
    with R.dataflow():
        y = R.multiply(x, R.const(3.5, "float32"))
        R.output(y)
    return y
"""

CPM_BEFORE = """
# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((2, 8), dtype="float32"), w1: R.Tensor((8, 4), dtype="float32"), w2: R.Tensor((8, 6), dtype="float32")) -> R.Tuple(R.Tensor((2, 4), dtype="float32"), R.Tensor((2, 6), dtype="float32")):
    with R.dataflow():
        a = R.matmul(x, w1)
        b = R.matmul(x, w2)
        gv = (a, b)
        R.output(gv)
    return gv
"""
CPM_EXPECTED = """
# from tvm.script import relax as R
@R.function
def main(x: R.Tensor((2, 8), dtype="float32"), w1: R.Tensor((8, 4), dtype="float32"), w2: R.Tensor((8, 6), dtype="float32")) -> R.Tuple(R.Tensor((2, 4), dtype="float32"), R.Tensor((2, 6), dtype="float32")):
    with R.dataflow():
        lv = R.concat((w1, w2), axis=1)
        lv1 = R.matmul(x, lv, out_dtype="float32")
        lv2 = R.split(lv1, indices_or_sections=[4], axis=1)
        a = lv2[0]
        b = lv2[1]
        gv = (a, b)
        R.output(gv)
    return gv
"""


@pytest.mark.parametrize("name,before,expected", [
    ("combine_parallel_matmul", CPM_BEFORE, CPM_EXPECTED),
    ("pow_to_multiply", POW_BEFORE, POW_EXPECTED),
    ("fold_constant", FOLD_BEFORE, FOLD_EXPECTED),
    ("clip_to_relu_min", CLIP_BEFORE, CLIP_EXPECTED),
    ("dead_code_elimination", DCE_BEFORE, DCE_EXPECTED),
    ("eliminate_common_subexpr", CSE_BEFORE, CSE_EXPECTED),
])
def test_textual_pass_before_expected(name, before, expected):
    target = A.make_target("llvm")
    out = edits.L0_PASSES[name](A.parse_module(before), target)
    assert A.structural_equal(out, A.parse_module(expected))


@pytest.fixture(scope="module")
def mbv2():
    task = resolve(ROOT / "benchmark/examples/mbv2_block.py")
    return task, ir.import_root(task)


def _run(c, params, inputs):
    built = ir.build_candidate(c, A.make_target("llvm"), params)
    return A.VMRunner(built.executable, A.device_for("llvm"))(*inputs)[0]


@pytest.mark.parametrize("chain,gone,new", [
    (["fold_batchnorm"], "relax.nn.batch_norm", None),
    # once failed: the NHWC weights have the NCHW weights' bytes, and params files were keyed by bytes only
    (["fold_batchnorm", "clip_to_relu_min", "convert_layout_nhwc"], None, "relax.permute_dims"),
    (["fold_batchnorm", "clip_to_relu_min", "convert_layout_nhwc", "conv1x1_to_matmul"], None, "relax.matmul"),
    (["conv1x1_to_matmul"], None, "relax.matmul"),
    # HWIO weights: the depthwise conv of the block too (groups = C, weight (3, 3, 1, C)), and 1x1 -> matmul
    (["fold_batchnorm", "clip_to_relu_min", "convert_layout_nhwc_hwio"], None, "relax.permute_dims"),
    (["fold_batchnorm", "clip_to_relu_min", "convert_layout_nhwc_hwio", "conv1x1_to_matmul"], None, "relax.matmul"),
    (["decompose_ops"], "relax.nn.batch_norm", None),
    (["fuse"], "relax.nn.conv2d", None),
])
def test_pass_chain_keeps_numerics(mbv2, tmp_path, chain, gone, new):
    task, root = mbv2
    x = task.make_inputs(0)[0].numpy()
    with torch.no_grad():
        ref = root.model(torch.from_numpy(x)).numpy()
    c = ir.root_candidate(task, root=root)
    for name in chain:
        out = edits.apply_edit(c, Edit(level="L0", kind="pass", payload={"name": name}), workdir=tmp_path,
                               root_params=root.params, build_check=False)
        assert out.error is None, out.error
        c = out.candidate
    assert c.params_file and Path(c.params_file).exists()
    assert "metadata" not in c.relax_text
    ops = A.count_relax_ops(A.parse_module(c.relax_text))
    if gone:
        assert ops.get(gone, 0) == 0
    if new:
        assert ops.get(new, 0) > 0
    y = _run(c, None, [x])
    np.testing.assert_allclose(y, ref, atol=1e-4, rtol=1e-4)


def test_unknown_and_noop_pass_are_errors(mbv2, tmp_path):
    task, root = mbv2
    c = ir.root_candidate(task, root=root)
    bad = edits.apply_edit(c, Edit(level="L0", kind="pass", payload={"name": "make_fast"}), workdir=tmp_path,
                           root_params=root.params)
    assert bad.candidate is None and "unknown L0 pass" in bad.error and "fold_batchnorm" in bad.error
    noop = edits.apply_edit(c, Edit(level="L0", kind="pass", payload={"name": "combine_parallel_matmul"}),
                            workdir=tmp_path, root_params=root.params)
    assert noop.candidate is None and "changed nothing" in noop.error


def _one_block(emit):
    """A Relax `main(x: (1, 4, 5, 5))` whose dataflow block is written by `emit(bb, x)`."""
    from tvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 4, 5, 5), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(emit(bb, x))
        bb.emit_func_output(out)
    return bb.get()


def test_conv1x1_to_matmul_before_expected():
    """A constant-weight pass, so Before/Expected are built with constants: the expected weight is the
    conv weight reshaped (no arithmetic, so bit-exact), the conv a reshape + matmul + reshape."""
    from tvm import relax

    w = (np.arange(32, dtype="float32").reshape(8, 4, 1, 1) / 7).astype("float32")
    before = _one_block(lambda bb, x: relax.op.nn.conv2d(x, relax.const(w)))

    def expected_body(bb, x):
        xm = bb.emit(relax.op.reshape(x, (1, 4, 25)))
        mm = bb.emit(relax.op.matmul(relax.const(np.ascontiguousarray(w.reshape(8, 4))), xm))
        return relax.op.reshape(mm, (1, 8, 5, 5))

    out = edits.L0_PASSES["conv1x1_to_matmul"](before, A.make_target("llvm"))
    assert A.structural_equal(out, _one_block(expected_body))
    # a 3x3 conv is not a GEMM: left alone
    w3 = np.ones((8, 4, 3, 3), "float32")
    conv3 = _one_block(lambda bb, x: relax.op.nn.conv2d(x, relax.const(w3), padding=1))
    assert A.structural_equal(edits.L0_PASSES["conv1x1_to_matmul"](conv3, A.make_target("llvm")), conv3)


def test_fold_batchnorm_before_expected():
    """conv2d -> batch_norm becomes conv2d(W') + add(b'). Statistics are chosen so the folding is exact
    in float32 (scale = gamma / sqrt(var + eps) = 2 / sqrt(4 + 0) = 1), so Expected is bit-exact."""
    from tvm import relax

    w = np.arange(32, dtype="float32").reshape(8, 4, 1, 1)
    gamma, beta = np.full(8, 2.0, "float32"), np.arange(8, dtype="float32")
    mean, var = np.ones(8, "float32"), np.full(8, 4.0, "float32")

    def before_body(bb, x):
        c = bb.emit(relax.op.nn.conv2d(x, relax.const(w)))
        bn = bb.emit(relax.op.nn.batch_norm(c, relax.const(gamma), relax.const(beta), relax.const(mean),
                                            relax.const(var), axis=1, epsilon=0.0))
        return relax.TupleGetItem(bn, 0)

    def expected_body(bb, x):
        c = bb.emit(relax.op.nn.conv2d(x, relax.const(w)))  # W * 1
        return relax.op.add(c, relax.const((beta - mean).reshape(1, 8, 1, 1)))  # beta - mean * 1

    out = edits.L0_PASSES["fold_batchnorm"](_one_block(before_body), A.make_target("llvm"))
    assert A.structural_equal(out, _one_block(expected_body))


def test_decompose_ops_before_expected():
    """batch_norm without a conv to fold into: (x - mean) / sqrt(var + eps) * gamma + beta, as the pass
    writes it (the statistics tuple it leaves behind is dead code for dead_code_elimination)."""
    from tvm import relax

    gamma, beta = np.full(4, 2.0, "float32"), np.arange(4, dtype="float32")
    mean, var = np.ones(4, "float32"), np.full(4, 4.0, "float32")
    c = {k: relax.const(v) for k, v in dict(gamma=gamma, beta=beta, mean=mean, var=var).items()}

    def before_body(bb, x):
        bn = bb.emit(relax.op.nn.batch_norm(x, c["gamma"], c["beta"], c["mean"], c["var"], axis=1, epsilon=0.0))
        return relax.TupleGetItem(bn, 0)

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 4, 5, 5), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            e = lambda v: bb.emit(relax.op.expand_dims(v, axis=[0, 2, 3]))  # noqa: E731
            centred = bb.emit(relax.op.subtract(x, e(c["mean"])))
            std = bb.emit(relax.op.sqrt(bb.emit(relax.op.add(e(c["var"]), relax.const(0.0, "float32")))))
            scaled = bb.emit(relax.op.multiply(bb.emit(relax.op.divide(centred, std)), e(c["gamma"])))
            gv = bb.emit_output(relax.op.add(scaled, e(c["beta"])))
            bb.emit(relax.Tuple([gv, c["mean"], c["var"]]))
        bb.emit_func_output(gv)
    out = edits.L0_PASSES["decompose_ops"](_one_block(before_body), A.make_target("llvm"))
    assert A.structural_equal(out, bb.get())


GOLDEN = Path(__file__).parent / "data" / "l0_golden"


@pytest.mark.parametrize("name", ["fuse", "fuse_transpose_matmul"])
def test_lowering_pass_before_expected(name):
    """Passes whose Expected holds TIR: reviewed golden files (`tests/data/l0_golden/NAME_expected.py`:
    `fuse` puts add + relu in one PrimFunc called once; `fuse_transpose_matmul` reads w[j, k] in an
    NT_matmul instead of materialising the transpose)."""
    before = A.parse_module((GOLDEN / f"{name}_before.py").read_text())
    out = edits.L0_PASSES[name](before, A.make_target("llvm"))
    assert A.structural_equal(out, A.parse_module((GOLDEN / f"{name}_expected.py").read_text()))


def test_convert_layout_nhwc_before_expected():
    """NCHW conv -> permute to NHWC, conv with the weight folded to OHWI (a transpose: bit-exact),
    permute back."""
    from tvm import relax

    w = np.arange(8 * 4 * 3 * 3, dtype="float32").reshape(8, 4, 3, 3)
    before = _one_block(lambda bb, x: relax.op.nn.conv2d(x, relax.const(w), padding=1))

    def expected_body(bb, x):
        xh = bb.emit(relax.op.permute_dims(x, axes=[0, 2, 3, 1]))
        y = bb.emit(relax.op.nn.conv2d(xh, relax.const(np.ascontiguousarray(w.transpose(0, 2, 3, 1))), padding=1,
                                       data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC"))
        return relax.op.permute_dims(y, axes=[0, 3, 1, 2])

    out = edits.L0_PASSES["convert_layout_nhwc"](before, A.make_target("llvm"))
    assert A.structural_equal(out, _one_block(expected_body))


def test_convert_layout_nhwc_hwio_before_expected():
    """NCHW conv -> permute to NHWC, conv with the weight pre-packed to HWIO as a new constant (a
    transpose: bit-exact), permute back. The epilogue (bias add) follows the conv into NHWC."""
    from tvm import relax

    w = np.arange(8 * 4 * 3 * 3, dtype="float32").reshape(8, 4, 3, 3)
    b = np.arange(8, dtype="float32").reshape(1, 8, 1, 1)

    def before_body(bb, x):
        y = bb.emit(relax.op.nn.conv2d(x, relax.const(w), strides=2, padding=1))
        return relax.op.add(y, relax.const(b))

    def expected_body(bb, x):
        xh = bb.emit(relax.op.permute_dims(x, axes=[0, 2, 3, 1]))
        y = bb.emit(relax.op.nn.conv2d(xh, relax.const(np.ascontiguousarray(w.transpose(2, 3, 1, 0))), strides=2,
                                       padding=1, data_layout="NHWC", kernel_layout="HWIO", out_layout="NHWC"))
        z = bb.emit(relax.op.add(y, relax.const(np.ascontiguousarray(b.transpose(0, 2, 3, 1)))))
        return relax.op.permute_dims(z, axes=[0, 3, 1, 2])

    out = edits.L0_PASSES["convert_layout_nhwc_hwio"](_one_block(before_body), A.make_target("llvm"))
    assert A.structural_equal(out, _one_block(expected_body))


def test_conv1x1_to_matmul_hwio_before_expected():
    """A 1x1 NHWC/HWIO conv is (NHW, C) @ (C, O): the weight is only reshaped (bit-exact)."""
    from tvm import relax

    w = (np.arange(32, dtype="float32").reshape(1, 1, 4, 8) / 7).astype("float32")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 5, 5, 4), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.nn.conv2d(x, relax.const(w), data_layout="NHWC", kernel_layout="HWIO"))
        bb.emit_func_output(out)
    before = bb.get()
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 5, 5, 4), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            xm = bb.emit(relax.op.reshape(x, (25, 4)))
            mm = bb.emit(relax.op.matmul(xm, relax.const(np.ascontiguousarray(w.reshape(4, 8)))))
            out = bb.emit_output(relax.op.reshape(mm, (1, 5, 5, 8)))
        bb.emit_func_output(out)
    got = edits.L0_PASSES["conv1x1_to_matmul"](before, A.make_target("llvm"))
    assert A.structural_equal(got, bb.get())
