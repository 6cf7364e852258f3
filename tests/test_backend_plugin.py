"""A backend is a file that carries its behaviour (issue 31): a fourth backend, Metal, lives in one file
of the test tree (tests/data/metal_backend.py) and the CLI, the config, the L2 path, the rule agents and
the loop take it from its record; no code outside leka/backends and leka/tvm_adapter decides on a
backend's name."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from leka.backends import backend_names, l2_language, register, unregister
from leka.core.config import load_config
from leka.core.types import EvalResult, UserError

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
METAL_FILE = DATA / "metal_backend.py"


def _load_metal():
    spec = importlib.util.spec_from_file_location("metal_backend", METAL_FILE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.BACKEND


@pytest.fixture
def metal():
    b = register(_load_metal())
    yield b
    unregister("metal")


def test_a_backend_file_is_discovered_by_name(tmp_path):
    """The table is the package's files: a `metal.py` beside the built-in ones is a backend, with no
    list edited (the package path is extended in a fresh process, so the tree stays untouched)."""
    pkg = tmp_path / "more"
    pkg.mkdir()
    shutil.copy(METAL_FILE, pkg / "metal.py")
    (pkg / "helpers.py").write_text("X = 1  # a module without BACKEND is not a backend\n")
    code = ("import sys, leka.backends as B\nB.__path__.append(sys.argv[1])\n"
            "print(','.join(B.backend_names()))\nprint(B.get_backend('metal').l2_languages)\n")
    r = subprocess.run([sys.executable, "-c", code, str(pkg)], cwd=ROOT, capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-2000:]
    names, langs = r.stdout.split("\n")[:2]
    assert names == "llvm,cuda,opencl,metal"  # the built-ins by rank, then the new one
    assert langs == "{'metal': 'metal'}"


def test_cli_and_config_take_it_from_the_table(metal):
    import leka.cli as cli

    cli._mount()
    for cmd in (["run", "--help"], ["oneshot", "--help"], ["bench", "eval", "--help"]):
        r = CliRunner().invoke(cli.app, cmd)
        assert r.exit_code == 0, r.output
        assert "metal" in r.output, (cmd, r.output)
    r = CliRunner().invoke(cli.app, ["backends"])
    assert r.exit_code == 0 and any(ln.startswith("metal") and "not here" in ln for ln in r.output.splitlines())
    r = CliRunner().invoke(cli.app, ["run", "--task", str(DATA / "tiny_task.py"), "--backend", "metal"])
    assert "no Apple GPU here" in str(r.exception)  # past the name check, stopped by the record's reason
    assert load_config([], ["backend=metal"]).backend == "metal"

    from leka.exp import config as C
    from leka.exp.scheduler import resources_for

    cfg = C.parse({"tasks": {"ids": ["l1_gelu_tanh"]}, "arms": [{"name": "leka"}], "backends": ["metal"],
                   "measure_slots": {"metal": 1}})
    assert [j.backend for j in C.expand(cfg)] == ["metal"]
    assert resources_for("metal", cfg) == {"CPU": 0.25}  # the record's default
    assert resources_for("opencl", cfg) == {"CPU": 0.5, "device:opencl-board": 1.0}
    with pytest.raises(UserError, match="unknown backend 'vulkan'.*metal"):
        C.parse({"arms": [{"name": "leka"}], "backends": ["vulkan"]})
    with pytest.raises(UserError, match="measure_slots"):
        C.parse({"arms": [{"name": "leka"}], "measure_slots": {"vulkan": 1}})


def test_without_it_the_name_is_unknown():
    assert "metal" not in backend_names()
    with pytest.raises(UserError, match="unknown backend 'metal'"):
        load_config([], ["backend=metal"])


def _metal_root():
    from benchmark.task import load_task_file
    from leka import ir

    task = load_task_file(DATA / "tiny_task.py")
    root = ir.import_root(task)
    return task, root, ir.root_candidate(task, "metal", root)


def test_l2_path_parses_guards_and_refuses_to_build_without_a_hook(metal, tmp_path):
    from leka import ir
    from leka import tvm_adapter as A
    from leka.core.types import Edit
    from leka.ir import edits, l2_guard
    from leka.ir import l2 as L2

    task, root, c = _metal_root()
    target = A.make_target("metal")
    assert target.kind.name == "metal" and A.is_gpu(target)
    src = A.runtime_source(ir.build_candidate(c, target, root.params).executable)  # TVM's Metal codegen
    (kernel,) = L2.kernel_names(src, "metal")  # found by the language's kernel_qualifier
    text = L2.kernel_text(src, kernel, "metal")
    assert text.startswith("kernel void ") and "[[ buffer(0) ]]" in text
    name = kernel.removesuffix("_kernel")

    def source(t: str) -> Edit:
        return Edit(level="L2", kind="source", target=name, payload={"language": "metal", "text": t, "entry": kernel})

    # the guard's profile for the language: a constant table is fine, a device variable is state
    assert l2_guard.scan("metal", "constant float T[2] = {1.0f, 2.0f};\n" + text) == []
    bad = edits.apply_edit(c, source("device float kept[4];\n" + text), workdir=tmp_path, root_params=root.params)
    assert bad.error_kind == "illegal_source" and "kept" in bad.error
    wrong = edits.apply_edit(c, Edit(level="L2", kind="source", target=name, payload={
        "language": "cuda", "text": text, "entry": kernel}), workdir=tmp_path, root_params=root.params)
    assert "does not fit backend metal" in wrong.error
    # the kernel is found by the language's syntax, or the edit says it is missing
    other = edits.apply_edit(c, source(text.replace(kernel, "another_kernel")), workdir=tmp_path,
                             root_params=root.params)
    assert f"must define the whole kernel {kernel!r}" in other.error
    edited = text.replace("0.000000e+00f", "0.0f")
    spliced, n = L2.splice_kernel(src, kernel, edited, "metal")
    assert n == 1 and "0.0f" in spliced and spliced.count("kernel void ") == src.count("kernel void ")
    # past every check of the language, the edit's build stops at the missing source hook (TVM's Metal
    # codegen has none) instead of building the generated source without the override
    ok = edits.apply_edit(c, source(edited), workdir=tmp_path, root_params=root.params)
    assert "no hook on its generated source" in ok.error
    entry = ir.L2Entry(kernel=name, language="metal", text=edited, entry=kernel)
    assert l2_language(entry.language).extension == "metal"
    key = ir.lower_layers(c, target, root.params).l2_keys[name]
    with pytest.raises(L2.L2Error, match="no hook on its generated source"):
        ir.build_candidate(c.model_copy(update={"l2": {key: entry}}), target, root.params)
    # compile_options are LLVM codegen attributes: the record lists none for Metal
    opts = edits.apply_edit(c, Edit(level="L2", kind="compile_options", payload={"options": {"opt-level": 2}}),
                            workdir=tmp_path)
    assert "takes no compile_options" in opts.error


class TableEvaluator:
    """Speedup from a table by the number of scheduled kernels; records what it was given."""

    def __init__(self):
        self.seen: list[tuple[str, int]] = []

    def evaluate_full(self, task, candidate=None, *, profile: bool = False, noise_floor: bool = False, **_):
        self.seen.append((candidate.backend, len(candidate.l1)))
        sp = {0: 1.0}.get(len(candidate.l1), 2.0)
        return EvalResult(task=task.id, backend=candidate.backend, compiled=True, correct=True, speedup=sp,
                          timing_valid=True, t_candidate_s=1e-3 / sp, t_baseline_s=1e-3, wall_s=0.0), None


def test_leka_run_on_the_table_evaluator(metal, tmp_path):
    """The loop with the rule agents the record names (OpenCL's work-group traces, checked against
    TVM's Metal codegen when applied) and a table for an evaluator."""
    from agents.l1_opencl import OpenCLRuleL1Agent
    from agents.rules import make_rule_agents
    from candidate_tree import Tree
    from leka.loop.context import RunContext
    from leka.loop.graph import run_graph
    from leka.loop.routers import make_router

    task, root, _ = _metal_root()
    cfg = load_config([], ["backend=metal", "run.budget_s=600", "run.seed=0", "run.routing=fixed:L1",
                           "run.max_evals=3"])
    agents = make_rule_agents(cfg.backend, root_params=root.params)
    assert type(agents["L1"]) is OpenCLRuleL1Agent
    ev = TableEvaluator()
    ctx = RunContext(cfg=cfg, task=task, run_dir=tmp_path, tree=Tree(tmp_path), evaluator=ev, agents=agents,
                     router=make_router(cfg), root=root)
    try:
        final = run_graph(ctx)
        nodes = ctx.tree.nodes()
        assert final["evals"] == 3 and [b for b, _ in ev.seen] == ["metal"] * 3
        children = nodes[1:]
        assert children and all(n.level == "L1" and "opencl: " in n.edit.rationale for n in children)
        measured = [n for n in children if n.status == "measured"]
        for n in measured:
            steps = n.edit.payload.get("trace") or next(iter(n.edit.payload["traces"].values()))
            assert {"blockIdx.x", "threadIdx.x"} <= {a for s in steps if s["prim"] == "bind" for a in s["args"]}
        # the edits were built by TVM's Metal codegen when applied: Metal has no 8-wide float vectors
        failed = [n for n in children if n.status == "failed"]
        assert measured and all("Metal" in n.result.error for n in failed), [n.result.error for n in failed]
        assert ctx.tree.best(1)[0].result.speedup == 2.0
    finally:
        ctx.tree.close()


# ------------------------------------------------------------------------------ no name tests left
BACKEND_NAMES = {"llvm", "cuda", "opencl"}
SCANNED = ("leka", "agents", "benchmark", "profilers", "candidate_tree")
EXEMPT = (ROOT / "leka" / "backends", ROOT / "leka" / "tvm_adapter", ROOT / "benchmark" / "tasks")


def _names_in(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in BACKEND_NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_in(e) for e in node.elts)
    return False


PROMPT_VARS = dict(task_id="t", views={"relax": "R", "tir": "T", "source": "S", "summary": "SUM", "reference": "REF",
                                        "tir_note": "n"},
                   task_contract="C", profile_text="P", lineage_text="", route_reason="", variants=3, vector_lanes=8,
                   num_cores=2, tool_name="propose_edits", role="r", proposes=True, max_edits=3, kernel="k",
                   blocks_table="", example="", source_ok=True, levels=["L0", "L1", "L2"])
TEMPLATES = (("system.j2", "L2"), ("l0_relax.j2", "L0"), ("l1_tir.j2", "L1"), ("l2_source.j2", "L2"),
             ("flat.j2", "flat"), ("oneshot.j2", "oneshot"), ("hw_sensing.j2", "router"))


def test_its_prompts_name_its_language_and_contract_and_no_other_backend(metal):
    """The templates take a backend's L2 languages, contract and compile options from its record only
    (issue 48, part 3): Metal's prompts say "metal" and its contract, and never another backend's name
    or language; llvm's say its own, not Metal's."""
    import re

    from leka.backends import all_backends
    from leka.llm.prompting import edit_kinds_for, render

    # (a one-letter language, C, is a word of any prose: its name is looked for as `"c"`)
    others = {n for b in all_backends() if b.name != "metal" for n in (b.name, *b.l2_languages) if len(n) > 1}
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(others))) + r")(?![\w-])", re.I)
    for tpl, level in TEMPLATES:
        for small in (False, True):
            text = render(tpl, level=level, backend="metal", small=small, **PROMPT_VARS)
            assert not pattern.search(text) and '"c"' not in text, (tpl, small, pattern.search(text))
    l2 = render("l2_source.j2", level="L2", backend="metal", small=False, **PROMPT_VARS)
    assert 'Language on backend metal: "metal" (a whole Metal Shading Language kernel function).' in " ".join(l2.split())
    assert metal.prompt_l2 in l2 and 'one of metal; "text"' in l2
    assert '"language": "metal"' in render("l2_source.j2", level="L2", backend="metal", small=True, **PROMPT_VARS)
    assert "compile_options" not in edit_kinds_for("metal")["L2"]  # its record lists no codegen options
    assert "compile_options" in edit_kinds_for("llvm")["L2"]
    llvm = render("l2_source.j2", level="L2", backend="llvm", small=False, **PROMPT_VARS)
    assert '"cpp" (a C/C++ function' in llvm and "metal" not in llvm.lower()


def backend_name_tests(path: Path) -> list[int]:
    """Lines that decide on a backend's name: a comparison or membership test with one, a dict keyed
    by one, a `case "cuda":`."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare) and any(_names_in(x) for x in (node.left, *node.comparators)):
            lines.append(node.lineno)
        elif isinstance(node, ast.Dict) and any(k is not None and _names_in(k) for k in node.keys):
            lines.append(node.lineno)
        elif isinstance(node, ast.MatchValue) and _names_in(node.value):
            lines.append(node.lineno)
    return lines


def test_the_scan_sees_a_name_test(tmp_path):
    p = tmp_path / "x.py"
    p.write_text('if b != "llvm":\n    pass\nd = {"cuda": 1}\nok = b in ("opencl", "x")\n'
                 'match b:\n    case "cuda":\n        pass\nfine = b == "metal" or run(backend="llvm")\n')
    assert backend_name_tests(p) == [1, 3, 4, 6]


def test_fewer_than_ten_backend_name_tests_remain():
    found = {}
    for top in SCANNED:
        for p in sorted((ROOT / top).rglob("*.py")):
            if any(p.is_relative_to(e) for e in EXEMPT):
                continue
            if lines := backend_name_tests(p):
                found[str(p.relative_to(ROOT))] = lines
    assert sum(map(len, found.values())) < 10, json.dumps(found, indent=1)
