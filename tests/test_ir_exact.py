"""The Relax record of a candidate round-trips exactly: non-finite constants print as text the parser
accepts, a module whose text is not exact is kept as TVM's JSON, and an L0 pass on an attention block
with a -inf mask gives a candidate that builds and matches PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from leka import ir
from leka import tvm_adapter as A
from leka.core.task import load_task_file
from leka.core.types import Edit
from leka.ir import edits

INF_BEFORE = '''# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="bool"):
        with R.dataflow():
            lv: R.Tensor((), dtype="float32") = R.const("-inf", "float32")
            lv1: R.Tensor((4,), dtype="float32") = R.maximum(x, lv)
            lv2: R.Tensor((4,), dtype="bool") = R.equal(lv1, R.const("inf", "float16"))
            lv3: R.Tensor((4,), dtype="bool") = R.equal(lv1, R.const("nan", "float32"))
            R.output(lv3)
        return lv3
'''
INF_EXPECTED = INF_BEFORE.replace('R.const("-inf", "float32")', 'R.const(float("-inf"), "float32")') \
    .replace('R.const("inf", "float16")', 'R.const(float("inf"), "float16")') \
    .replace('R.const("nan", "float32")', 'R.const(float("nan"), "float32")')


def test_nonfinite_constants_print_as_parseable_text():
    assert A.parseable_relax_text(INF_BEFORE) == INF_EXPECTED
    assert A.parseable_relax_text(INF_EXPECTED) == INF_EXPECTED  # idempotent
    mod = A.parse_module(INF_EXPECTED)
    consts = [b.value for b in mod["main"].body.blocks[0].bindings if hasattr(b.value, "value")]
    assert np.isneginf(consts[0].value.numpy())
    text = A.relax_text(mod)  # the printer's "-inf" comes out parseable, and is a fixed point
    assert 'R.const(float("-inf"), "float32")' in text and '"-inf", ' not in text
    assert A.structural_equal(A.parse_module(text), mod)
    assert A.relax_persisted(mod) == (text, None)  # exact as text: no JSON record


def test_module_whose_text_does_not_parse_is_kept_as_json():
    # a tensor constant outside `main` is not lifted and prints as metadata[...], which does not parse
    import tvm
    from tvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2,), "float32"))
    with bb.function("helper", [x]):
        bb.emit_func_output(bb.emit(relax.op.add(x, relax.const(np.array([1.0, 2.0], "float32")))))
    mod = A.parse_module(INF_EXPECTED)
    mod = tvm.IRModule({**dict(mod.functions.items()), "helper": bb.get()["helper"]})
    text, js = A.relax_persisted(mod)
    assert "metadata" in text and js is not None
    back = A.load_relax(text, js)
    assert A.structural_equal(back, mod)
    assert A.structural_hash(back) == A.structural_hash(mod)


MASKED_ATTENTION = '''
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(16, 16)

    def forward(self, x):
        s = self.q(x) @ x.transpose(-1, -2)
        mask = torch.full((8, 8), float("-inf")).triu(1)
        return torch.softmax(s + mask, dim=-1) @ x


def get_inputs():
    return [torch.randn(2, 8, 16)]


def get_init_inputs():
    return []
'''


@pytest.fixture
def masked_task(tmp_path):
    p = tmp_path / "masked_attention.py"
    p.write_text(MASKED_ATTENTION)
    return load_task_file(p)


def _run(c, root, inputs):
    built = ir.build_candidate(c, A.make_target("llvm"), root.params)
    return A.VMRunner(built.executable, A.device_for("llvm"))(*[x.numpy() for x in inputs])


def test_masked_attention_root_and_l0_pass_round_trip(masked_task, tmp_path):
    root = ir.import_root(masked_task)
    assert '"-inf", ' not in root.text and 'float("-inf")' in root.text  # the mask prints parseably
    c = ir.root_candidate(masked_task, root=root)
    assert c.relax_json is None  # exact as text
    inputs = masked_task.make_inputs(0)
    with torch.no_grad():
        want = root.model(*inputs).numpy()
    np.testing.assert_allclose(_run(c, root, inputs)[0], want, rtol=1e-4, atol=1e-5)
    out = edits.apply_edit(c, Edit(level="L0", kind="pass", payload={"name": "fold_constant"}),
                           workdir=tmp_path, root_params=root.params)
    assert out.ok, out.error
    new = out.candidate
    assert A.structural_equal(ir.relax_ir(new), A.parse_module(new.relax_text))
    np.testing.assert_allclose(_run(new, root, inputs)[0], want, rtol=1e-4, atol=1e-5)
    # the agents' view comes back as an L0 text edit, the mask included (the output doubled)
    lines = new.relax_text.splitlines()
    ret = next(i for i in range(len(lines) - 1, -1, -1) if lines[i].strip().startswith("return "))
    var = lines[ret].split("return ")[1].strip()  # main returns a 1-tuple
    edited = "\n".join(lines[:ret] + [lines[ret].replace(f"return {var}", f"return (R.add({var}[0], {var}[0]),)")]
                       + lines[ret + 1:])
    out2 = edits.apply_edit(new, Edit(level="L0", kind="relax_text", payload={"text": edited}),
                            workdir=tmp_path, root_params=root.params)
    assert out2.ok, out2.error
    assert out2.candidate.relax_json is None
    np.testing.assert_allclose(_run(out2.candidate, root, inputs)[0], 2 * want, rtol=1e-4, atol=1e-5)


def test_tir_equivalent_tells_a_different_body_apart():
    from tvm.script import tirx as T

    @T.prim_func(private=True, s_tir=True)
    def f(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.sblock("b"):
                vi = T.axis.spatial(4, i)
                b[vi] = a[vi] * T.float32(2.0)

    @T.prim_func(private=True, s_tir=True)
    def g(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.sblock("b"):
                vi = T.axis.spatial(4, i)
                b[vi] = a[vi] * T.float32(3.0)

    assert A.tir_equivalent(A.parse_tir(f.script()), f)
    assert not A.tir_equivalent(f, g)


def test_candidate_folder_keeps_the_json_record_while_relax_py_is_unchanged(masked_task, tmp_path):
    import tvm

    from leka.ir import files

    c = ir.root_candidate(masked_task)
    js = tvm.ir.save_json(ir.relax_ir(c))  # a record as a module whose text is not exact would get
    c = c.model_copy(update={"relax_json": js})
    d = files.write_candidate(c, tmp_path / "cand")
    back = files.read_candidate(masked_task, d, workdir=tmp_path / "w")
    assert back.relax_json == js and back.digest == c.digest
    (d / "relax.py").write_text(c.relax_text.replace("R.nn.softmax(", "R.nn.softmax(", 1) + "\n")
    edited = files.read_candidate(masked_task, d, workdir=tmp_path / "w")
    assert edited.relax_json is None  # the edited text is the record now
