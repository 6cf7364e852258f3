"""A level is a spec that owns its behaviour (issue 31, item 2): a fourth level, L3, is one spec, one agent
and one template in the test tree (tests/data/l3_level.py, l3_level.j2). Registered, it is in the config,
the routing modes, the prompts, the rule agents and the lowering, the router routes to it on its own
evidence, its agent's edits make candidates, and an evaluation child lowers them with its stage."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from leka.core.config import load_config
from leka.core.levels import LEVEL_SPECS, level_names, register_level, routing_modes, unregister_level
from leka.core.types import Edit, EvalResult, UserError

DATA = Path(__file__).parent / "data"
MODULE = "l3_level"


def _load():
    if MODULE in sys.modules:
        return sys.modules[MODULE]
    spec = importlib.util.spec_from_file_location(MODULE, DATA / "l3_level.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[MODULE] = mod  # the spec's "l3_level:..." references resolve through it
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def l3():
    mod = _load()
    register_level(mod.LEVEL)
    yield mod
    unregister_level("L3")


def test_registered_it_is_in_every_table(l3):
    from agents.hw_sensing import score_levels
    from agents.llm_agent import ROLES
    from agents.rules import RULE_AGENTS
    from leka.ir.edits import handlers
    from leka.llm.prompting import EDIT_KINDS, TEMPLATES, edit_tool
    from leka.llm.small import small_items
    from leka.loop.graph import build_graph
    from profilers.report import ProfileReport

    assert level_names() == ("L0", "L1", "L2", "L3")
    assert load_config([], []).run.layers == ["L0", "L1", "L2", "L3"]  # the default: every level
    assert load_config([], ["run.routing=fixed:L3"]).run.routing == "fixed:L3" and "fixed:L3" in routing_modes()
    assert handlers()["L3", "note"] is l3.apply_note and RULE_AGENTS["L3"] is l3.RuleL3Agent
    assert EDIT_KINDS["L3"]["note"] == (None, {"text": "the note, one line"}, "append one comment line to the Relax module")
    assert TEMPLATES["L3"].endswith("l3_level.j2") and ROLES["L3"] == l3.LEVEL.role
    assert edit_tool("L3")["parameters"]["properties"]["edits"]["items"]["properties"]["kind"]["enum"] == ["note"]
    assert "L3" in edit_tool("oneshot")["parameters"]["properties"]["edits"]["items"]["properties"]["level"]["enum"]
    assert [i["properties"]["kind"]["const"] for i in small_items("L3", kernels=[], blocks=[], backend="llvm",
                                                                   source=False)] == ["note"]
    assert score_levels(ProfileReport())["L3"] == (0.0, "no profile: nothing to note")
    assert "l3" in build_graph().compile().get_graph().nodes
    assert Edit(level="L3", kind="note").level == "L3"


def test_without_it_the_name_is_unknown():
    assert "L3" not in LEVEL_SPECS
    with pytest.raises(ValueError, match="level must be one of L0, L1, L2, got 'L3'"):
        Edit(level="L3", kind="note")
    with pytest.raises(UserError, match="unknown level"):
        load_config([], ["run.layers=[L0,L3]"])
    with pytest.raises(ValueError, match="built in"):
        unregister_level("L1")


def _kernel(**kw) -> dict:
    base = {"name": "fused_add", "seconds": 1e-4, "share": 1.0, "calls": 1, "flops": 1e5, "bytes": 4096,
            "gflops": 1.0, "gbps": 1.0, "intensity": 0.25, "roof_gflops": 2.0, "roof_fraction": 0.5,
            "bound": "memory", "kind": "injective", "scheduled": True}
    return {**base, **kw}


class TableEvaluator:
    """Speedup from the number of notes; a profile whose one kernel is scheduled and reads well below
    its roof (L1 and L2 evidence, weaker than the note level's)."""

    def __init__(self, notes):
        self.notes, self.seen = notes, []

    def evaluate_full(self, task, candidate=None, *, profile: bool = False, noise_floor: bool = False, **_):
        n = len(self.notes(candidate))
        self.seen.append(n)
        sp = 1.0 + 0.5 * n
        res = EvalResult(task=task.id, compiled=True, correct=True, speedup=sp, timing_valid=True,
                         t_candidate_s=1e-3 / sp, t_baseline_s=1e-3, wall_s=0.0)
        return res, {"kernels": [_kernel()], "total_s": 1e-4, "kernel_count": 1}


def test_the_loop_routes_to_it_and_its_agent_makes_candidates(l3, tmp_path):
    from agents.rules import rule_agent_classes
    from benchmark.task import load_task_file
    from candidate_tree import Tree
    from leka import ir
    from leka.loop.context import RunContext
    from leka.loop.graph import run_graph
    from leka.loop.routers import make_router

    class Nothing:
        def __init__(self, level):
            self.level = level

        def propose(self, candidate, context):
            return []

    task = load_task_file(DATA / "tiny_task.py")
    cfg = load_config([], ["run.budget_s=600", "run.seed=0", "run.max_evals=3", "run.explore=0"])
    root = ir.Root(task=task, text="# root relax text (never parsed: the evaluator is a table)\n",
                   params={}, n_inputs=1, model=None)
    agents = {**{lv: Nothing(lv) for lv in ("L0", "L1", "L2")}, "L3": rule_agent_classes("llvm")["L3"]("llvm")}
    ev = TableEvaluator(l3.notes)
    ctx = RunContext(cfg=cfg, task=task, run_dir=tmp_path, tree=Tree(tmp_path), evaluator=ev, agents=agents,
                     router=make_router(cfg), root=root)
    try:
        final = run_graph(ctx)
        nodes = ctx.tree.nodes()
        assert final["evals"] == 3 and ev.seen == [0, 1, 2]
        assert [(n.id, n.parent, n.level) for n in nodes] == [(1, None, None), (2, 1, "L3"), (3, 2, "L3")]
        # routed by its own score (the first time with the bonus of a level not tried yet)
        assert all(n.status == "measured" and n.route_reason.startswith("1 kernel(s) without a note")
                   and n.route_reason.endswith("-> L3") for n in nodes[1:]), [n.route_reason for n in nodes]
        assert ctx.tree.best(1)[0].result.speedup == 2.0
        assert nodes[2].edit == Edit(level="L3", kind="note", payload={"text": "note 2"}, rationale="a fourth level's edit")
    finally:
        ctx.tree.close()


def test_its_llm_agent_renders_its_template(l3, tmp_path):
    from agents.llm_agent import LLMAgent
    from leka.core.protocols import AgentContext
    from leka.llm.scripted import Scripted

    reply = {"tool_args": {"edits": [{"level": "L3", "kind": "note", "payload": {"text": "from the model"},
                                      "rationale": "a note"}]}}
    provider = Scripted([reply])

    class Cand:
        relax_text = "# a Relax module\n"

    agent = LLMAgent("L3", provider, views=lambda c, ctx: {"relax": c.relax_text}, check=lambda c, e: None)
    edits = agent.propose(Cand(), AgentContext(task_id="tiny", backend="llvm", level="L3"))
    assert edits == [Edit(level="L3", kind="note", payload={"text": "from the model"}, rationale="a note")]
    prompt = "\n".join(m.content for m in provider.calls[0])
    assert "the L3 agent (notes on the Relax module)" in prompt and "# L3: notes on the Relax module" in prompt
    assert 'level "L3", kind "note": append one comment line' in prompt


def test_an_evaluation_child_lowers_with_its_stage(l3, tmp_path):
    """The level reaches the evaluation process: its module travels in the job, the child registers it
    and lowers with its stage (which writes the child's pid to the marked file)."""
    from benchmark.judge import Evaluator
    from benchmark.task import load_task_file
    from leka import ir
    from leka.core.config import EvaluatorConfig

    task = load_task_file(DATA / "tiny_task.py")
    root = ir.import_root(task)
    mark = tmp_path / "stage_ran"
    c = l3.apply_note(ir.root_candidate(task, root=root), Edit(level="L3", kind="note", payload={
        "text": f"mark:{mark}"}), tmp_path, root.params).candidate
    res = Evaluator(EvaluatorConfig(timeout_s=300), cache_dir=str(tmp_path)).evaluate(task, c, time_it=False)
    assert res.compiled and res.correct, res.error
    assert mark.exists() and int(mark.read_text()) != os.getpid()  # lowered in the child, by L3's stage
