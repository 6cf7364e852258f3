"""The hardware-sensing router: ablation modes, switched-off levels, resumable state, and profile
routing on real modules (layout-heavy -> L0, unscheduled hot matmul -> L1, scheduled but scalar ->
L2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.hw_sensing import HardwareSensingAgent, parse_layers
from benchmark.task import load_task_file
from leka import ir
from leka import tvm_adapter as A
from leka.core.levels import routing_modes
from leka.core.protocols import Agent, AgentContext, Router
from leka.ir import L1Entry
from profilers.profile import profile_candidate
from profilers.report import ProfileReport

LAYOUT_TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8))

    def forward(self, x):
        a = x.permute(0, 2, 1).contiguous()
        b = a.permute(1, 0, 2).contiguous()
        return b.transpose(1, 2).contiguous(), x[:1, :8, :8].reshape(8, 8) @ self.w

def get_inputs():
    return [torch.randn(16, 256, 256)]

def get_init_inputs():
    return []
'''

MM_TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(256, 256, bias=False)

    def forward(self, x):
        return self.fc(x)

def get_inputs():
    return [torch.randn(128, 256)]

def get_init_inputs():
    return []
'''

# parallel rows only: the k loop stays innermost, so LLVM cannot vectorise the fp reduction
SCALAR_TRACE = [{"prim": "get_sblock", "args": ["matmul"], "out": ["b"]},
                {"prim": "get_loops", "args": ["b"], "out": ["i", "j", "k"]},
                {"prim": "parallel", "args": ["i"]}]
VECTOR_TRACE = [{"prim": "get_sblock", "args": ["matmul"], "out": ["b"]},
                {"prim": "get_loops", "args": ["b"], "out": ["i", "j", "k"]},
                {"prim": "split", "args": ["j", [None, 16]], "out": ["j0", "j1"]},
                {"prim": "reorder", "args": [["i", "j0", "k", "j1"]]},
                {"prim": "parallel", "args": ["i"]},
                {"prim": "vectorize", "args": ["j1"]},
                {"prim": "decompose_reduction", "args": ["b", "k"], "out": ["init"]}]


def ctx(**extra) -> AgentContext:
    return AgentContext(task_id="t", backend="llvm", level="", extra=extra)


def task_file(directory: Path, name: str, text: str):
    p = directory / f"{name}.py"
    p.write_text(text)
    return load_task_file(p)


@pytest.fixture(scope="module")
def layout_case(tmp_path_factory):
    task = task_file(tmp_path_factory.mktemp("layout"), "layout_task", LAYOUT_TASK)
    c = ir.root_candidate(task)
    return c, profile_candidate(c, repeat=3)


@pytest.fixture(scope="module")
def mm_cases(tmp_path_factory):
    """The same matmul unscheduled, scheduled without vectors, and scheduled with vectors."""
    task = task_file(tmp_path_factory.mktemp("mm"), "mm_task", MM_TASK)
    root = ir.import_root(task)
    c = ir.root_candidate(task, root=root)
    funcs = A.prim_funcs(A.lower(ir.relax_module(c, root.params), A.make_target("llvm")))
    (name, func), = funcs.items()
    key = A.structural_hash(func)
    out = {"root": (c, profile_candidate(c, repeat=3, root=root))}
    for label, trace in (("scalar", SCALAR_TRACE), ("vector", VECTOR_TRACE)):
        cc = c.model_copy(update={"l1": {key: L1Entry(func=name, trace=trace)}})
        out[label] = (cc, profile_candidate(cc, repeat=3, root=root))
    return out


# ---------------------------------------------------------------------------- ablation modes
def test_fixed_never_leaves_its_level(mm_cases, layout_case):
    reports = [None, layout_case[1], *(r for _, r in mm_cases.values())]
    for lv in ("L0", "L1", "L2"):
        agent = HardwareSensingAgent(f"fixed:{lv}")
        assert {agent.decide(None, r, ctx()).level for r in reports * 3} == {lv}


def test_round_robin_cycles_and_resumes():
    agent = HardwareSensingAgent("round_robin")
    seq = [agent.decide(None, None, ctx()).level for _ in range(7)]
    assert seq == ["L0", "L1", "L2", "L0", "L1", "L2", "L0"]
    resumed = HardwareSensingAgent("round_robin")
    resumed.load_state(agent.state())
    assert resumed.decide(None, None, ctx()).level == agent.decide(None, None, ctx()).level == "L1"
    two = HardwareSensingAgent("round_robin", layers="L0,L2")
    assert [two.decide(None, None, ctx()).level for _ in range(4)] == ["L0", "L2", "L0", "L2"]


def test_random_is_reproducible_by_seed_and_resumable():
    def draws(agent, n):
        return [agent.decide(None, None, ctx()).level for _ in range(n)]

    a, b, c = (HardwareSensingAgent("random", seed=s) for s in (7, 7, 8))
    sa, sb, sc = draws(a, 40), draws(b, 40), draws(c, 40)
    assert sa == sb and sa != sc and set(sa) == {"L0", "L1", "L2"}
    resumed = HardwareSensingAgent("random", seed=0)
    resumed.load_state(a.state())  # seed 7 after 40 draws
    assert draws(resumed, 20) == draws(b, 20)


def test_switched_off_levels_are_never_returned(mm_cases, layout_case):
    reports = [r for _, r in mm_cases.values()] + [layout_case[1], None]
    for mode in ("profile", "round_robin", "random"):
        agent = HardwareSensingAgent(mode, layers=("L0", "L1"), seed=3)
        got = {agent.decide(None, r, ctx()).level for r in reports * 4}
        assert got <= {"L0", "L1"}, (mode, got)
    # the scalar case argues for L2; with L2 off the router says so and picks the next best
    cand, rep = mm_cases["scalar"]
    route = HardwareSensingAgent("profile", layers="L0,L1").decide(cand, rep, ctx())
    assert route.level == "L1" and "L2 scored higher but is switched off" in route.reason


def test_bad_configuration_is_refused():
    with pytest.raises(ValueError, match="round_robin"):
        HardwareSensingAgent("greedy")
    with pytest.raises(ValueError, match="not in layers"):
        HardwareSensingAgent("fixed:L2", layers="L0,L1")
    with pytest.raises(ValueError):
        parse_layers("L0,L3")
    with pytest.raises(ValueError):
        parse_layers("")
    assert parse_layers(["L2", "L0"]) == ("L0", "L2")
    assert "fixed:L1" in routing_modes()
    with pytest.raises(ValueError, match="router state"):
        HardwareSensingAgent("random").load_state(HardwareSensingAgent("round_robin").state())


def test_router_is_an_agent_that_makes_no_edits(mm_cases):
    agent = HardwareSensingAgent()
    assert isinstance(agent, Agent)
    assert agent.propose(mm_cases["root"][0], ctx()) == []


def test_router_is_the_loops_router_unwrapped(mm_cases):
    """The loop calls it as a Router: (level, reason), the decision `decide` makes with its scores."""
    cand, rep = mm_cases["scalar"]
    agent = HardwareSensingAgent()
    assert isinstance(agent, Router)
    full = HardwareSensingAgent().decide(cand, rep, ctx())
    assert agent.route(cand, rep, ctx()) == (full.level, full.reason)
    rr = HardwareSensingAgent("round_robin")
    rr.route(None, None, ctx())
    rr.load_state({})  # a run's first route finds no checkpoint: the position is kept, not reset
    assert rr.route(None, None, ctx())[0] == "L1"


# ---------------------------------------------------------------------------- profile routing
def test_layout_heavy_module_routes_to_l0(layout_case):
    cand, rep = layout_case
    assert rep.layout_share > 0.5
    route = HardwareSensingAgent().decide(cand, rep, ctx())
    assert route.level == "L0", route
    assert "layout copies" in route.reason and route.scores["L0"] > route.scores["L1"]


def test_unscheduled_hot_matmul_routes_to_l1(mm_cases):
    cand, rep = mm_cases["root"]
    hot = rep.hottest()
    assert hot.kind == "matmul" and not hot.scheduled and hot.share > 0.5
    route = HardwareSensingAgent().decide(cand, rep, ctx())
    assert route.level == "L1", route
    assert f"hot kernel {hot.name}" in route.reason and "no schedule yet" in route.reason
    # the report as plain data (what AgentContext.profile carries) routes the same way
    assert HardwareSensingAgent().decide(cand, rep.model_dump(), ctx()).level == "L1"


def test_scheduled_but_scalar_hot_matmul_routes_to_l2(mm_cases):
    cand, rep = mm_cases["scalar"]
    hot = rep.hottest()
    assert hot.scheduled and hot.vector_fma == 0
    route = HardwareSensingAgent().decide(cand, rep, ctx())
    assert route.level == "L2", route
    assert "no packed FMAs" in route.reason
    # once vectorised, the same kernel no longer looks scalar to the router
    vcand, vrep = mm_cases["vector"]
    vhot = vrep.hottest()
    assert vhot.scheduled and vhot.vector_fma > 0
    vroute = HardwareSensingAgent().decide(vcand, vrep, ctx())
    assert "scalar" not in vroute.reason and vroute.scores["L2"] < route.scores["L2"]


def test_with_the_tuner_a_scheduled_hot_kernel_argues_for_l1(mm_cases):
    """MetaSchedule as an L1 tool (config `tuner`): a vectorised, scheduled hot matmul far from its roof
    is the tool's job; without the tool the same profile scores L1 lower (re-tune weight only)."""
    vcand, vrep = mm_cases["vector"]
    plain = HardwareSensingAgent().decide(vcand, vrep, ctx())
    tuned = HardwareSensingAgent().decide(vcand, vrep, ctx(tuner=True))
    assert tuned.scores["L1"] > plain.scores["L1"]
    assert tuned.level == "L1" and "MetaSchedule" in tuned.reason, tuned
    # an unscheduled kernel is routed the same with or without the tool
    cand, rep = mm_cases["root"]
    assert HardwareSensingAgent().decide(cand, rep, ctx(tuner=True)).scores == \
        HardwareSensingAgent().decide(cand, rep, ctx()).scores


def test_levels_already_tried_are_skipped_and_no_profile_has_a_default(mm_cases):
    cand, rep = mm_cases["root"]
    route = HardwareSensingAgent().decide(cand, rep, ctx(exclude_levels=["L1"]))
    assert route.level != "L1" and "already tried" in route.reason
    empty = HardwareSensingAgent().decide(cand, ProfileReport(), ctx())
    assert empty.level == "L1" and "no profile" in empty.reason
    assert HardwareSensingAgent(layers="L0,L2").decide(cand, None, ctx()).level == "L0"


def test_a_candidate_with_wrong_numbers_goes_to_l0_first(mm_cases):
    # no profile (a failed check has none): NaN / mismatch -> L0, a crash or an L0 already tried -> default
    cand, _ = mm_cases["root"]
    agent = HardwareSensingAgent()
    for kind in ("nan", "mismatch"):
        r = agent.decide(cand, None, ctx(failed=kind))
        assert r.level == "L0" and kind in r.reason, r
    assert agent.decide(cand, None, ctx(failed="runtime")).level == "L1"
    assert agent.decide(cand, None, ctx(failed="nan", exclude_levels=["L0"])).level == "L1"
    assert HardwareSensingAgent(layers="L1,L2").decide(cand, None, ctx(failed="nan")).level == "L1"


def test_a_kernel_with_an_l2_override_is_not_sent_back_to_l2(mm_cases):
    # the scalar profile as data, with its hot kernel marked as already overridden at L2
    cand, rep = mm_cases["scalar"]
    hot = rep.hottest()
    marked = rep.model_copy(update={"kernels": [k.model_copy(update={"l2_override": k.name == hot.name,
                                                                      "vector_fma": None})
                                                for k in rep.kernels]})
    before = HardwareSensingAgent().decide(cand, rep, ctx())
    after = HardwareSensingAgent().decide(cand, marked, ctx())
    assert before.level == "L2" and after.scores["L2"] < before.scores["L2"]
    assert "already has an L2 source override" in after.reason or after.level != "L2"


def test_untried_levels_are_covered_after_a_few_evaluations(mm_cases):
    from agents.hw_sensing import COVERAGE_EVALS

    cand, rep = mm_cases["root"]  # the profile alone says L1 (unscheduled hot matmul)
    only_l1 = {"L0": 0, "L1": 3, "L2": 0}
    early = HardwareSensingAgent().decide(cand, rep, ctx(level_counts=only_l1, evals=COVERAGE_EVALS - 1))
    assert early.level == "L1" and "coverage" not in early.reason
    late = HardwareSensingAgent().decide(cand, rep, ctx(level_counts=only_l1, evals=COVERAGE_EVALS))
    assert late.level == "L0" and late.reason.startswith("coverage: no L0 node") and "favours L1" in late.reason
    # the next untried level once L0 has a node; a switched-off or exhausted level is never forced
    assert HardwareSensingAgent().decide(cand, rep, ctx(level_counts={"L0": 2, "L1": 3, "L2": 0},
                                                       evals=9)).level == "L2"
    assert HardwareSensingAgent(layers="L1,L2").decide(cand, rep, ctx(level_counts=only_l1, evals=9)).level == "L2"
    assert HardwareSensingAgent().decide(cand, rep, ctx(level_counts=only_l1, evals=9,
                                                       exclude_levels=["L0"])).level == "L2"
    # every level tried: back to the profile
    done = HardwareSensingAgent().decide(cand, rep, ctx(level_counts={"L0": 1, "L1": 3, "L2": 1}, evals=9))
    assert done.level == "L1" and "coverage" not in done.reason
