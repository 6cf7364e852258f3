"""Text -> module -> text round trips of the Relax (L0) and every PrimFunc's TIR (L1) per task.

The llvm subset (benchmark/subsets/subset69.json) when it exists, else the embedded examples; the
whole suite is `slow`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmark.task import resolve, suite
from leka import ir
from leka import tvm_adapter as A

ROOT = Path(__file__).resolve().parents[1]


def _fast_tasks() -> list[str]:
    try:
        from benchmark.subsets import load_subset

        ids = load_subset("subset69", "llvm")
        return [i for i in ids if resolve(i).level in (1, 2)]
    except Exception:  # noqa: BLE001 - the subset file is written by another part; fall back
        return [str(ROOT / "benchmark/examples/mbv2_block.py"), str(ROOT / "benchmark/examples/llama_block.py")]


def _round_trip(ref: str) -> None:
    task = resolve(ref)
    root = ir.import_root(task)
    imported, _ = A.lift_consts(A.import_torch(task.make_model(), task.make_inputs(0)))
    mod = A.parse_module(root.text)
    assert A.relax_text(mod) == root.text  # Relax: text -> module -> same text
    c = ir.root_candidate(task, root=root)
    # the candidate's record is the imported module itself (the text, or TVM's JSON where it is not exact)
    assert A.structural_equal(ir.relax_ir(c), imported)
    assert (c.relax_json is None) == A.structural_equal(mod, imported)
    low, keys = ir.lowered_module(c, A.make_target("llvm"), root.params)
    for name, f in A.prim_funcs(low).items():
        back = A.parse_tir(f.script())
        # the agents' TIR view stands for the PrimFunc (exactly, or but for block metadata TVMScript
        # does not print: A.tir_equivalent)
        assert A.tir_equivalent(back, f), name


@pytest.mark.parametrize("ref", _fast_tasks())
def test_round_trip(ref):
    _round_trip(ref)


@pytest.mark.slow
@pytest.mark.parametrize("ref", sorted(suite()))
def test_round_trip_suite(ref):
    _round_trip(ref)


def test_non_finite_constants_parse():
    # TVM 0.27 prints -inf / nan scalar constants as R.const("-inf", ...), which its parser rejects
    text = ("@I.ir_module\nclass Module:\n    @R.function\n"
            "    def main(x: R.Tensor((3,), dtype=\"float32\")) -> R.Tensor((3,), dtype=\"float32\"):\n"
            "        with R.dataflow():\n"
            "            a: R.Tensor((), dtype=\"float32\") = R.const(\"-inf\", \"float32\")\n"
            "            b: R.Tensor((3,), dtype=\"float32\") = R.maximum(x, a)\n"
            "            R.output(b)\n        return b\n")
    mod = A.parse_module(text)
    assert 'R.const(float("-inf"), "float32")' in A.relax_text(mod)  # printed parseable
    assert A.structural_equal(A.parse_module(A.relax_text(mod)), mod)
    ex = A.build(A.lower(mod, A.make_target("llvm")), A.make_target("llvm"))
    out = A.VMRunner(ex, A.device_for("llvm"))(np.array([-np.inf, -1.0, 2.0], dtype="float32"))[0]
    assert out.tolist() == [-np.inf, -1.0, 2.0]
