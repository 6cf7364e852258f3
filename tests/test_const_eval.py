"""Compile-time evaluation of a candidate's PrimFuncs never runs in a trusted process (issue 43).

An L0 text whose Relax graph calls a PrimFunc of its own on constants: Relax's FoldConstant builds
and runs that PrimFunc while the text is lowered. Here it calls `system("touch MARKER")`. The
marker must never appear, whichever trusted process lowers the text: the adapter's lowering, the
judge, `leka bench eval --candidate` and the agent loop's L0 edit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tvm import relax

from benchmark.judge import Evaluator
from benchmark.task import load_task_file
from leka import ir
from leka import tvm_adapter as A
from leka.core.config import EvaluatorConfig
from leka.core.types import Edit
from leka.ir.edits import apply_edit
from leka.tvm_adapter import const_eval

ROOT = Path(__file__).resolve().parents[1]
TINY = Path(__file__).parent / "data" / "tiny_task.py"

# the tiny task (y = relu(x) * c0 + x), plus `c1 = evil(const)` that the graph adds as c1 - c1 (zero)
EVIL = '''# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def evil(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
        T.func_attr({"tirx.noalias": True})
        for i in range(64):
            with T.sblock("b"):
                vi = T.axis.spatial(64, i)
                b[vi] = a[vi] + T.Cast("float32", T.call_extern("int32", "system", "touch MARKER"))

    @R.function
    def main(x: R.Tensor((4, 64), dtype="float32"), c0: R.Tensor((64,), dtype="float32")) -> R.Tuple(R.Tensor((4, 64), dtype="float32")):
        cls = Module
        with R.dataflow():
            c1 = R.call_tir(cls.evil, (R.const([1.0] * 64, "float32"),), out_ty=R.Tensor((64,), dtype="float32"))
            a: R.Tensor((4, 64), dtype="float32") = R.nn.relu(x)
            b: R.Tensor((4, 64), dtype="float32") = R.multiply(a, c0)
            y: R.Tensor((4, 64), dtype="float32") = R.add(b, x)
            y2 = R.add(y, R.subtract(c1, c1))
            gv = (y2,)
            R.output(gv)
        return gv
'''


def evil_text(marker: Path) -> str:
    return EVIL.replace("MARKER", str(marker))


@pytest.fixture(scope="module")
def tiny():
    return load_task_file(TINY)


def test_the_exploit_is_real_in_process(tmp_path):
    """Without the confinement, FoldConstant runs the candidate's system call in this process."""
    marker = tmp_path / "pwned"
    out = relax.transform.FoldConstant()(A.parse_module(evil_text(marker)))
    assert marker.exists()
    assert "call_tir" not in out["main"].script()  # folded: the PrimFunc ran


def test_no_evaluation_folds_nothing_that_runs(tmp_path):
    marker = tmp_path / "pwned"
    with const_eval.no_evaluation():
        out = relax.transform.FoldConstant()(A.parse_module(evil_text(marker)))
    assert not marker.exists()
    assert "call_tir" in out["main"].script()


def test_pure_relax_modules_fold_in_process(tiny):
    """Roots and the rule agents' L0 edits hold no PrimFunc before legalization: no fork for them."""
    root = ir.import_root(tiny)
    pure = A.parse_module(ir.root_candidate(tiny, root=root).relax_text)
    calls: list[int] = []

    def fold(m):
        calls.append(os.getpid())
        return m

    assert not const_eval.has_prim_funcs(pure) and const_eval.has_prim_funcs(A.parse_module(EVIL))
    const_eval.run_pipeline(fold, pure)
    assert calls == [os.getpid()]
    const_eval.run_pipeline(fold, A.parse_module(EVIL))
    assert calls == [os.getpid()]  # the second ran in the confined child


def test_lowering_runs_the_candidates_primfunc_confined(tiny, tmp_path):
    marker = tmp_path / "pwned"
    p = tmp_path / "cand.py"
    p.write_text(evil_text(marker))
    root = ir.import_root(tiny)
    low, _ = ir.lowered_module(ir.candidate_from_file(tiny, p), A.make_target("llvm"), root.params)
    assert not marker.exists()
    assert A.prim_funcs(low)  # lowered all the same, from the child's JSON record


def test_a_crash_in_the_folded_code_is_an_error_not_a_crash():
    def boom(mod):
        import ctypes

        ctypes.string_at(0)  # SIGSEGV, as code writing past its buffers would

    with pytest.raises(const_eval.ConstEvalError, match="died without an answer"):
        const_eval.isolated(boom, A.parse_module(EVIL))


def test_the_judge_never_runs_it(tiny, tmp_path):
    marker = tmp_path / "pwned"
    p = tmp_path / "cand.py"
    p.write_text(evil_text(marker))
    ev = Evaluator(EvaluatorConfig(timeout_s=120, memory_cap_gb=2.0), cache_dir=str(tmp_path / "cache"))
    res = ev.evaluate(tiny, ir.candidate_from_file(tiny, p), time_it=False)
    assert not marker.exists()
    assert res.correct, (res.error_kind, res.error)  # c1 - c1 is zero whatever the call returned


def test_bench_eval_candidate_never_runs_it(tmp_path):
    marker = tmp_path / "pwned"
    p = tmp_path / "cand.py"
    p.write_text(evil_text(marker))
    js = tmp_path / "res.json"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    r = subprocess.run([sys.executable, "-m", "leka.cli", "bench", "eval", str(TINY), "--candidate", str(p),
                        "--json", str(js), "--set", f"baseline.cache_dir={tmp_path / 'cache'}",
                        "--set", "evaluator.timing_budget_s=0.5"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert not marker.exists()
    assert js.exists(), r.stderr[-2000:]
    assert json.loads(js.read_text())["correct"], r.stderr[-2000:]


def test_the_agent_loops_l0_edit_never_runs_it(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("LEKA_CACHE", str(tmp_path / "cache"))
    marker = tmp_path / "pwned"
    root = ir.import_root(tiny)
    c = ir.root_candidate(tiny, root=root)
    out = apply_edit(c, Edit(level="L0", kind="relax_text", payload={"text": evil_text(marker)}),
                     workdir=tmp_path / "w", root_params=root.params)
    assert not marker.exists()
    assert out.candidate is not None, out.error  # a legal text: it lowers and builds, confined
    out2 = apply_edit(out.candidate, Edit(level="L0", kind="pass", payload={"name": "fold_constant"}),
                      workdir=tmp_path / "w", root_params=root.params)
    assert not marker.exists(), out2.error
