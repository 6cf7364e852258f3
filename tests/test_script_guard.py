"""Candidate TVMScript is parsed, never run (issue 26 item 4): `leka.core.script_guard` rejects text
outside the printer's subset with the line, printed text parses as before, and an L0 text whose
annotation would create a file creates nothing through `leka run`, `leka bench eval --candidate`, the
evaluator and the L0 edit of the agent loop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tvm
import tvm_ffi

from benchmark.judge import Evaluator
from benchmark.task import load_task_file, resolve
from leka import ir
from leka import tvm_adapter as A
from leka.core.config import EvaluatorConfig
from leka.core.script_guard import ScriptRejected, check_tvmscript
from leka.core.types import Edit
from leka.ir.edits import apply_edit

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
TINY = DATA / "tiny_task.py"

# a whole L0 candidate of the tiny task (y = relu(x) * c0 + x); {ann} is x's first dimension (4)
TEMPLATE = '''# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(({ann}, 64), dtype="float32"), c0: R.Tensor((64,), dtype="float32")) -> R.Tuple(R.Tensor((4, 64), dtype="float32")):
        with R.dataflow():
            a: R.Tensor((4, 64), dtype="float32") = R.nn.relu(x)
            b: R.Tensor((4, 64), dtype="float32") = R.multiply(a, c0)
            y: R.Tensor((4, 64), dtype="float32") = R.add(b, x)
            gv: R.Tuple(R.Tensor((4, 64), dtype="float32")) = (y,)
            R.output(gv)
        return gv
'''
ANN_LINE = 7


def evil_text(marker: Path) -> str:
    """A candidate that TVM's bare parser runs: `touch()` returns None, so the dimension is still 4."""
    return TEMPLATE.format(ann=f'__import__("pathlib").Path({str(marker)!r}).touch() or 4')


def _rejected(text: str) -> ScriptRejected:
    with pytest.raises(ScriptRejected) as ei:
        A.parse_module(text)
    return ei.value


# ----------------------------------------------------------------------------- (a) rejected, with the line
@pytest.mark.parametrize(("ann", "needle"), [
    ('__import__("os").getpid()', "'__import__'"),
    ('open("/etc/hostname") and 4', "builtin 'open'"),
    ('eval("4")', "builtin 'eval'"),
    ('getattr(R, "nn") and 4', "builtin 'getattr'"),
    ("(lambda: 4)()", "lambda"),
    ("().__class__.__bases__ and 4", "(leading '_') is not allowed"),
    ('R.nn.__dict__ and 4', "'__dict__'"),
    ('f"{4}"', "f-string"),
    ("[i for i in (4,)][0]", "list comprehension"),
    ("T.int64(i for i in (4,))", "generator expression"),
    ("(n := 4)", "walrus"),
    ("T.int64(*[4])", "star-argument"),
    ("tvm.os.getpid() and 4", "'tvm'"),
    ("R.parser.tvm.os.getpid() and 4", "module tvm.relax.script.parser.parser"),
    ("T.ir and 4", "module tvm.tirx.script.builder.ir"),
    ("R.nn and 4", "a namespace may only be used to name what is in it"),
    ("float(4)", "builtin 'float'"),
    ('TypeVar("n", bound=int)', "TypeVar is allowed only as"),
])
def test_constructs_outside_tvmscript_are_rejected_with_the_line(ann, needle, tmp_path):
    e = _rejected(TEMPLATE.format(ann=ann))
    assert e.line == ANN_LINE and f"line {ANN_LINE}:" in str(e), str(e)
    assert needle in str(e), str(e)
    assert "\n" not in str(e)


MAIN = ('    @R.function\n    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):\n'
        "        return x\n")


@pytest.mark.parametrize(("text", "line", "needle"), [
    ("import os\n@I.ir_module\nclass Module:\n" + MAIN, 1, "'import'"),
    ("from os import system as R\n@I.ir_module\nclass Module:\n" + MAIN, 1, "'from os import system'"),
    ("@I.ir_module\nclass Module(BasePyModule):\n" + MAIN, 2, "bases"),
    ("@I.ir_module\nclass Module:\n    @I.pyfunc\n    def f(self):\n        pass\n" + MAIN, 3, "'pyfunc'"),
    ("@I.ir_module\nclass Module:\n    global x\n" + MAIN, 3, "'global'"),
    ("@I.ir_module\nclass Module:\n    breakpoint = 1\n" + MAIN, 3, "builtin name 'breakpoint'"),
    ("@I.ir_module\nclass Module:\n    R = 1\n" + MAIN, 3, "namespace 'R'"),
    ("@I.ir_module\nclass Module:\n    nn = R.nn\n" + MAIN, 3, "a namespace may only be used"),
    ("@I.ir_module\nclass Module:\n    try:\n        pass\n    except E:\n        pass\n" + MAIN, 3, "'try'"),
    ("@I.ir_module\nclass Module:\n    @R.function\n    def main(x: exec) -> R.Tensor((4,), dtype=\"float32\"):\n"
     "        return x\n", 4, "builtin 'exec'"),
    ("@I.ir_module\nclass Module:\n" + MAIN + "        R.call_packed(**{'a': 1})\n", 6, "'**'"),
    ("@T.prim_func\ndef main(A: T.Buffer((4,), \"float32\")):\n    for i in range(4):\n"
     "        A[i] = T.float32(compile('1', 's', 'eval') and 1)\n", 4, "builtin 'compile'"),
    ("@I.ir_module\nclass Module:\n    def main(x:\n", 3, "syntax error"),
])
def test_statements_outside_tvmscript_are_rejected_with_the_line(text, line, needle):
    with pytest.raises(ScriptRejected) as ei:
        (A.parse_tir if "prim_func" in text else A.parse_module)(text)
    assert ei.value.line == line and needle in str(ei.value), str(ei.value)


def test_the_guard_is_pure_python_and_names_the_construct():
    with pytest.raises(ScriptRejected, match=r"line 1: the Python builtin 'open'"):
        check_tvmscript('x = open("f")\n')
    check_tvmscript('x = R.const(float("-inf"), "float32")\nfor i in range(3):\n    y = T.int64(i)\n')


def test_the_exploit_is_real_without_the_guard(tmp_path):
    """The same text through TVM's parser as it comes creates the file: what the guard stands for."""
    marker = tmp_path / "pwned"
    tvm.script.from_source(evil_text(marker))
    assert marker.exists()


def test_no_builtins_in_the_parse_namespace_either(tmp_path):
    """Second layer: past the AST check, TVM's `eval` finds no builtins but `float`."""
    from leka.tvm_adapter.importer import _script_namespaces

    marker = tmp_path / "pwned"
    with pytest.raises(Exception, match="__import__"):
        tvm.script.from_source(evil_text(marker), extra_vars=dict(_script_namespaces()))
    assert not marker.exists()
    assert "tvm" not in _script_namespaces() and set(_script_namespaces()["__builtins__"]) == {"float"}


def test_guarded_from_source_is_the_only_caller_of_the_parser():
    """Nothing bypasses the guard: TVM's parser is called in one place of the project's code."""
    import re

    # `model.eval()` is torch's; a bare exec / eval is Python's
    pat = re.compile(r"\b(from_source|script\.parse|ir_module)\s*\(|(?<![.\w])(exec|eval)\s*\(")
    hits = [f"{p.relative_to(ROOT)}:{i}" for pkg in ("leka", "agents", "benchmark", "profilers", "candidate_tree")
            for p in (ROOT / pkg).rglob("*.py") if "benchmark/tasks" not in str(p)
            for i, ln in enumerate(p.read_text().splitlines(), 1) if pat.search(ln.split("#")[0])]
    # l2_source: arithmetic, no builtins; recurrent: our own LSTM / GRU template, filled with ints only
    allowed = {"leka/tvm_adapter/importer.py", "agents/l2_source.py", "leka/tvm_adapter/recurrent.py"}
    assert [h for h in hits if h.rsplit(":", 1)[0] not in allowed] == [], hits
    assert sum(h.startswith("leka/tvm_adapter/importer.py") for h in hits) == 1, hits


# ----------------------------------------------------------------------------- (b) printed text accepted
def _printed_files() -> list[Path]:
    return sorted(p for p in DATA.rglob("*.py") if "@R.function" in p.read_text() or "@T.prim_func" in p.read_text())


@pytest.mark.parametrize("path", _printed_files(), ids=lambda p: p.name)
def test_printed_test_data_is_accepted(path):
    check_tvmscript(A.parseable_relax_text(path.read_text()))


@pytest.mark.parametrize("ref", ["l1_gelu_tanh", "l1_conv2d_depthwise_3x3", "l2_cross_attention",
                                 "l1_cumsum", str(ROOT / "benchmark/examples/mbv2_block.py")])
def test_printer_output_of_suite_roots_parses_to_the_same_ir(ref, tmp_path, monkeypatch):
    monkeypatch.setenv("LEKA_CACHE", str(tmp_path))
    task = resolve(ref)
    root = ir.import_root(task)
    text = A.parseable_relax_text(root.text)
    assert tvm_ffi.structural_equal(A.parse_module(root.text), tvm.script.from_source(text))
    # constants unbound: a bound module prints `metadata[...]` without the metadata, which no parser reads
    low = A.lower(A.parse_module(root.text), A.make_target("llvm"), gpu_schedule=False)
    # the whole lowered module (R.call_tir, cls., PrimFuncs named after builtins: `def sum`) and each
    # PrimFunc as an L1 agent sees it
    assert tvm_ffi.structural_equal(A.parse_module(low.script()), tvm.script.from_source(low.script()))
    for name, f in A.prim_funcs(low).items():
        assert tvm_ffi.structural_equal(A.parse_tir(f.script()), tvm.script.from_source(f.script())), name


def test_scheduled_tir_and_the_extern_wrapper_parse(tmp_path, monkeypatch):
    """L1 TIR as a schedule leaves it (blocks, T.axis.remap, split loops, T.vectorized, T.parallel) and
    the adapter's own L2 wrapper text (T.call_extern) go through the same path."""
    monkeypatch.setenv("LEKA_CACHE", str(tmp_path))
    task = resolve("l1_gelu_tanh")
    root = ir.import_root(task)
    low, _ = ir.lowered_module(ir.root_candidate(task, root=root), A.make_target("llvm"), root.params)
    name, f = next(iter(A.prim_funcs(low).items()))
    sch = tvm.s_tir.Schedule(f)
    blocks = sch.get_child_blocks(sch.get_sblock("root"))
    sch.compute_inline(blocks[0])
    loops = sch.get_loops(blocks[-1])
    _, inner = sch.split(loops[-1], factors=[None, 8])
    sch.vectorize(inner)
    sch.parallel(loops[1])
    text = sch.mod["main"].script()
    assert "T.vectorized" in text and "T.parallel" in text
    assert tvm_ffi.structural_equal(A.parse_tir(text), tvm.script.from_source(text))
    assert A.extern_prim_func(f, "my_kernel") is not None


# ----------------------------------------------------------------------------- (c) acceptance (issue 26)
@pytest.fixture(scope="module")
def tiny():
    return load_task_file(TINY)


def test_the_template_is_a_correct_candidate(tiny, tmp_path):
    """The malicious texts below differ from a correct candidate by their annotation alone."""
    mod = A.parse_module(TEMPLATE.format(ann="4"))
    assert A.param_names(mod) == ["x", "c0"]


def test_evaluator_never_runs_the_annotation(tiny, tmp_path):
    marker = tmp_path / "pwned"
    p = tmp_path / "cand.py"
    p.write_text(evil_text(marker))
    ev = Evaluator(EvaluatorConfig(timeout_s=60, memory_cap_gb=2.0), cache_dir=str(tmp_path / "cache"))
    res = ev.evaluate(tiny, ir.candidate_from_file(tiny, p), time_it=False)
    assert not marker.exists()
    assert not res.correct and res.error_kind == "compile", (res.error_kind, res.error)
    assert "rejected before parsing" in res.error and "'__import__'" in res.error, res.error


def test_l0_edit_of_the_agent_loop_never_runs_the_annotation(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("LEKA_CACHE", str(tmp_path / "cache"))
    marker = tmp_path / "pwned"
    root = ir.import_root(tiny)
    c = ir.root_candidate(tiny, root=root)
    out = apply_edit(c, Edit(level="L0", kind="relax_text", payload={"text": evil_text(marker)}),
                     workdir=tmp_path / "w", root_params=root.params)
    assert not marker.exists()
    assert out.candidate is None and out.error and "rejected before parsing" in out.error, out.error
    # an L1 TIR text goes the same way
    low, _ = ir.lowered_module(c, A.make_target("llvm"), root.params)
    name, f = next(iter(A.prim_funcs(low).items()))
    bad = f.script().replace("T.Buffer((", f"T.Buffer((__import__('pathlib').Path({str(marker)!r}).touch() or ", 1)
    out = apply_edit(c, Edit(level="L1", kind="tir_text", target=name, payload={"text": bad}),
                     workdir=tmp_path / "w", root_params=root.params)
    assert not marker.exists() and out.error and "rejected before parsing" in out.error, out.error


def _leka(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run([sys.executable, "-m", "leka.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=env)


def test_bench_eval_candidate_never_runs_the_annotation(tmp_path):
    marker = tmp_path / "pwned"
    p = tmp_path / "cand.py"
    p.write_text(evil_text(marker))
    js = tmp_path / "res.json"
    r = _leka("bench", "eval", str(TINY), "--candidate", str(p), "--json", str(js),
              "--set", f"baseline.cache_dir={tmp_path / 'cache'}", "--set", "evaluator.timing_budget_s=0.5")
    assert not marker.exists()
    assert r.returncode == 1, r.stderr[-2000:]  # the candidate failed; not bad input, not a crash
    res = json.loads(js.read_text())
    assert res["error_kind"] == "compile" and "rejected before parsing" in res["error"], res["error"]


def test_leka_run_never_runs_the_annotation(tmp_path):
    """`leka run --policy llm`: the model's L0 edit carries the text; the loop records a failed edit and
    ends normally."""
    marker = tmp_path / "pwned"
    edit = {"level": "L0", "kind": "relax_text", "target": None, "payload": {"text": evil_text(marker)},
            "rationale": "a faster graph"}
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([{"tool_args": {"edits": [edit]}}] * 3))
    out = tmp_path / "out"
    r = _leka("run", "--task", str(TINY), "--policy", "llm", "--model", f"scripted:{replies}",
              "--routing", "fixed:L0", "--layers", "L0", "--max-evals", "2", "--budget", "90s",
              "--out", str(out), "--quiet", "--set", "evaluator.timing_budget_s=0.5",
              "--set", f"baseline.cache_dir={tmp_path / 'cache'}", timeout=150)
    assert not marker.exists()
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    (run_dir,) = [d for d in out.iterdir() if d.is_dir()]
    assert "rejected before parsing" in "".join(p.read_text(errors="replace") for p in run_dir.rglob("*")
                                                  if p.is_file() and p.suffix in (".jsonl", ".json", ".md"))
