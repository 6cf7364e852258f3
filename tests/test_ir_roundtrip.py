"""Text -> module -> text round trips of the Relax (L0) and every PrimFunc's TIR (L1) per task.

The llvm subset (benchmark/subsets/subset69.json) when it exists, else the embedded examples; the
whole suite is `slow`."""

from __future__ import annotations

from pathlib import Path

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
