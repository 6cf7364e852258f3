"""A level is a table row that owns its state (issues 31 and 48): a fourth level, L3, the runtime options
the candidate's program runs with, is one file and one template in the test tree (tests/data/l3_level.py,
l3_level.j2). Registered from a run config, it is in the config, the routing modes, the prompts, the
rule agents, the grid presets; its state lives in `Candidate.levels`, changes the digest, is written to
the candidate folder and read back, survives an L0 edit; the sandboxed worker runs the candidate with
its thread count; and `leka run` with the rule policy routes to it and measures its candidates."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from leka.core.config import load_config
from leka.core.levels import LEVEL_SPECS, level_names, routing_modes, unregister_level
from leka.core.types import Edit, EvalResult, UserError

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
LEVEL_REF = f"{DATA / 'l3_level.py'}:LEVEL"
TASK = DATA / "tiny_task.py"


@pytest.fixture
def l3():
    """L3 registered the way a run config registers it (`levels.extra`)."""
    cfg = load_config([], [f"levels.extra=[{json.dumps(LEVEL_REF)}]"])
    assert cfg.levels.extra == [LEVEL_REF]
    yield sys.modules["l3_level"]
    unregister_level("L3")


def _root():
    from benchmark.task import load_task_file
    from leka import ir

    task = load_task_file(TASK)
    root = ir.import_root(task)
    return task, root, ir.root_candidate(task, root=root)


def test_registered_it_is_in_every_table(l3):
    from agents.hw_sensing import score_levels
    from agents.llm_agent import ROLES
    from agents.rules import RULE_AGENTS
    from leka.exp import config as C
    from leka.ir.edits import handlers
    from leka.llm.prompting import EDIT_KINDS, TEMPLATES, edit_tool
    from leka.llm.small import small_items
    from leka.loop.graph import build_graph
    from profilers.report import ProfileReport

    assert level_names() == ("L0", "L1", "L2", "L3")
    assert load_config([], []).run.layers == ["L0", "L1", "L2", "L3"]  # the default: every level
    assert load_config([], ["run.routing=fixed:L3"]).run.routing == "fixed:L3" and "fixed:L3" in routing_modes()
    assert handlers()["L3", "runtime"] is l3.apply_runtime and RULE_AGENTS["L3"] is l3.RuleL3Agent
    assert EDIT_KINDS["L3"]["runtime"][2] == "set the runtime options the candidate runs with"
    assert TEMPLATES["L3"].endswith("l3_level.j2") and ROLES["L3"] == l3.LEVEL.role
    assert edit_tool("L3")["parameters"]["properties"]["edits"]["items"]["properties"]["kind"]["enum"] == ["runtime"]
    assert "L3" in edit_tool("oneshot")["parameters"]["properties"]["edits"]["items"]["properties"]["level"]["enum"]
    assert [i["properties"]["kind"]["const"] for i in small_items("L3", kernels=[], blocks=[], backend="llvm",
                                                                   source=False)] == ["runtime"]
    assert score_levels(ProfileReport())["L3"] == (0.0, "no profile: nothing to run")
    assert "l3" in build_graph().compile().get_graph().nodes
    # a grid preset turns it off, as the built-in levels' do; the grid registers it from its own config
    unregister_level("L3")
    cfg = C.parse({"tasks": {"ids": ["l1_gelu_tanh"]}, "arms": [{"name": "leka"}, {"name": "l3_off"}],
                   "levels": [LEVEL_REF]})
    off = next(a for a in cfg.arms if a.name == "l3_off")
    assert off.recipe == "leka" and off.set == ["run.layers=[L0,L1,L2]"]
    assert cfg.run_set == [f"levels.extra={json.dumps([LEVEL_REF])}"]  # every run of the grid registers it


def test_without_it_the_name_is_unknown():
    assert "L3" not in LEVEL_SPECS
    with pytest.raises(ValueError, match="level must be one of L0, L1, L2, got 'L3'"):
        Edit(level="L3", kind="runtime")
    with pytest.raises(UserError, match="unknown level"):
        load_config([], ["run.layers=[L0,L3]"])
    with pytest.raises(ValueError, match="built in"):
        unregister_level("L1")
    with pytest.raises(UserError, match="levels.extra: .*no file"):
        load_config([], ['levels.extra=["/nonexistent/l9.py:LEVEL"]'])


def test_its_state_digest_files_carry_and_run_options(l3, tmp_path):
    """The state is the candidate's: in `levels`, in the digest (the root's unchanged), in the JSON
    record, in the candidate folder (l3/runtime.json) and back, kept by an L0 edit, and read by the
    run phase (leka.ir.run_options)."""
    from leka import ir
    from leka.ir.edits import apply_edit
    from leka.ir.files import read_candidate, write_candidate

    task, root, c0 = _root()
    out = apply_edit(c0, Edit(level="L3", kind="runtime", payload={"threads": 1}), workdir=tmp_path,
                     root_params=root.params)
    assert out.ok, out.error
    c = out.candidate
    assert c.levels["L3"] == l3.RuntimeOptions(threads=1) and c.state("L3").threads == 1
    assert c.digest != c0.digest and c.relax_text == c0.relax_text and not c.l1 and not c.l2
    assert ir.Candidate.model_validate_json(c.model_dump_json()) == c
    again = apply_edit(c, Edit(level="L3", kind="runtime", payload={"threads": 1}), workdir=tmp_path)
    assert again.error and "already" in again.error
    bad = apply_edit(c0, Edit(level="L3", kind="runtime", payload={"threads": 0}), workdir=tmp_path)
    assert bad.error and "threads must be" in bad.error
    d = write_candidate(c, tmp_path / "cand")
    assert json.loads((d / "l3" / "runtime.json").read_text()) == {"threads": 1}
    assert not (write_candidate(c0, tmp_path / "cand0") / "l3").exists()
    assert read_candidate(task, d, workdir=tmp_path / "w").digest == c.digest
    # an L0 edit keeps the runtime options (the level has no carry hook: they do not depend on the graph)
    moved = apply_edit(c, Edit(level="L0", kind="pass", payload={"name": "fuse"}), workdir=tmp_path,
                       root_params=root.params, build_check=False)
    assert moved.ok, moved.error
    assert moved.candidate.relax_text != c.relax_text and moved.candidate.state("L3").threads == 1
    assert ir.run_options(c, 4).threads == 1 and ir.run_options(c0, 4).threads == 4
    assert ir.run_options(c, 4).extra == {"threads_asked": 1}


def test_the_loop_routes_to_it_and_its_agent_makes_candidates(l3, tmp_path):
    from agents.rules import rule_agent_classes
    from benchmark.task import load_task_file
    from candidate_tree import Tree
    from leka import ir
    from leka.loop.context import RunContext
    from leka.loop.graph import run_graph
    from leka.loop.routers import make_router

    if (os.cpu_count() or 1) < 2:
        pytest.skip("the rule agent's second option needs two cores")

    class Nothing:
        def __init__(self, level):
            self.level = level

        def propose(self, candidate, context):
            return []

    class TableEvaluator:
        """Speedup from the thread count; a profile of one kernel (evidence for every level)."""

        def __init__(self):
            self.seen = []

        def evaluate_full(self, task, candidate=None, *, profile: bool = False, noise_floor: bool = False, **_):
            n = l3.options(candidate).threads if candidate is not None else None
            self.seen.append(n)
            sp = 1.0 + 0.5 * (n or 0)
            res = EvalResult(task=task.id, compiled=True, correct=True, speedup=sp, timing_valid=True,
                             t_candidate_s=1e-3 / sp, t_baseline_s=1e-3, wall_s=0.0)
            kernel = {"name": "fused_add", "seconds": 1e-4, "share": 1.0, "calls": 1, "flops": 1e5, "bytes": 4096,
                      "gflops": 1.0, "gbps": 1.0, "intensity": 0.25, "roof_gflops": 2.0, "roof_fraction": 0.5,
                      "bound": "memory", "kind": "injective", "scheduled": True}
            return res, {"kernels": [kernel], "total_s": 1e-4, "kernel_count": 1}

    task = load_task_file(TASK)
    cfg = load_config([], ["run.budget_s=600", "run.seed=0", "run.max_evals=3", "run.explore=0"])
    root = ir.import_root(task)
    agents = {**{lv: Nothing(lv) for lv in ("L0", "L1", "L2")}, "L3": rule_agent_classes("llvm")["L3"]("llvm")}
    ev = TableEvaluator()
    ctx = RunContext(cfg=cfg, task=task, run_dir=tmp_path, tree=Tree(tmp_path), evaluator=ev, agents=agents,
                     router=make_router(cfg), root=root)
    try:
        final = run_graph(ctx)
        nodes = ctx.tree.nodes()
        assert final["evals"] == 3 and ev.seen == [None, 1, 2]
        assert [(n.id, n.parent, n.level) for n in nodes] == [(1, None, None), (2, 1, "L3"), (3, 2, "L3")]
        assert all(n.status == "measured" and n.route_reason.endswith("-> L3") for n in nodes[1:])
        assert ctx.tree.best(1)[0].result.speedup == 2.0
    finally:
        ctx.tree.close()


def test_its_llm_agent_renders_its_template(l3, tmp_path):
    from agents.llm_agent import LLMAgent
    from leka.core.protocols import AgentContext
    from leka.ir import views as V
    from leka.llm.scripted import Scripted

    reply = {"tool_args": {"edits": [{"level": "L3", "kind": "runtime", "payload": {"threads": 1},
                                      "rationale": "one thread"}]}}
    provider = Scripted([reply])
    _, _, c0 = _root()
    c = c0.with_state("L3", l3.RuntimeOptions(threads=2))
    agent = LLMAgent("L3", provider, views=lambda cand, ctx: {"state": V.state_view(cand, "L3")},
                     check=lambda cand, e: None)
    edits = agent.propose(c, AgentContext(task_id="tiny", backend="llvm", level="L3"))
    assert edits == [Edit(level="L3", kind="runtime", payload={"threads": 1}, rationale="one thread")]
    prompt = "\n".join(m.content for m in provider.calls[0])
    assert "the L3 agent (runtime options of the candidate's program)" in prompt
    assert "# L3: runtime options of the candidate's program" in prompt and '"threads": 2' in prompt
    assert 'level "L3", kind "runtime": set the runtime options the candidate runs with' in prompt
    assert "- L3 (runtime): small kernels whose calls" in _router_prompt()


def _router_prompt() -> str:
    from leka.llm.prompting import render

    return render("hw_sensing.j2", task_id="t", backend="llvm", num_cores=2, vector_lanes=8, views={},
                  task_contract="", profile_text="", lineage_text="", route_reason="", levels=list(level_names()))


def _tree(run_dir: Path) -> list[tuple]:
    con = sqlite3.connect(run_dir / "tree.sqlite")
    try:
        return con.execute("SELECT id, parent, level, edit, result FROM nodes ORDER BY id").fetchall()
    finally:
        con.close()


def test_leka_run_with_the_level_from_a_config(tmp_path):
    """`leka run` (rule agents) with L3 registered by the run config only: it routes to L3, the edits
    become measured nodes, the evaluation child loads the level from the job and the sandboxed worker
    runs the candidate with its thread count; the node's record reads back as a candidate folder."""
    if (os.cpu_count() or 1) < 2 or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("a thread count below the job's needs two cores")
    cfg = tmp_path / "l3.yaml"
    cfg.write_text(f"levels:\n  extra: [{json.dumps(LEVEL_REF)}]\n")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "leka.cli", "run", "--task", str(TASK), "--config", str(cfg),
                        "--layers", "L3", "--max-evals", "2", "--budget", "4m", "--out", str(out), "--quiet",
                        "--set", "evaluator.timing_budget_s=0.5", "--set", f"baseline.cache_dir={tmp_path / 'cache'}"],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    (run_dir,) = [d for d in out.iterdir() if d.is_dir()]
    rows = _tree(run_dir)
    assert [(i, p, lv) for i, p, lv, _, _ in rows] == [(1, None, None), (2, 1, "L3")]
    assert json.loads(rows[1][3])["payload"] == {"threads": 1}
    root_res, l3_res = json.loads(rows[0][4]), json.loads(rows[1][4])
    assert l3_res["correct"] and l3_res["extra"]["run_options"] == {"threads_asked": 1, "threads": 1}
    assert "run_options" not in root_res["extra"]
    # the worker made fewer threads for one compute thread than the root's worker did for the job's
    assert l3_res["extra"]["sandbox_threads"] < root_res["extra"]["sandbox_threads"]
    record = json.loads((run_dir / "nodes" / "2" / "candidate.json").read_text())
    assert record["levels"] == {"L3": {"threads": 1}}
    assert json.loads((run_dir / "nodes" / "2" / "l3" / "runtime.json").read_text()) == {"threads": 1}
    assert "levels:\n  extra:" in (run_dir / "config.yaml").read_text()  # --resume registers it again


def test_an_installed_package_registers_it_by_entry_point(tmp_path):
    """A package's entry point of the group "leka.levels" registers its level in any process that reads
    a config (a fresh one here, with a dist-info on its path and tests/data holding the module)."""
    dist = tmp_path / "leka_runtime_level-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: leka-runtime-level\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[leka.levels]\nruntime = l3_level:LEVEL\n")
    code = ("from leka.core.config import load_config\nc = load_config([], [])\n"
            "print(','.join(c.run.layers))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(DATA), str(ROOT)])}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["L0,L1,L2,L3"]
