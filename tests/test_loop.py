"""The loop driven directly: the real graph, tree and edit application, with a fake evaluator (speedups
from a table) and scripted agents. Compile-option edits apply without building, so a run is seconds."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from benchmark.task import load_task_file
from candidate_tree import Tree
from leka import ir
from leka.core.config import load_config
from leka.core.types import Edit, EvalResult
from leka.loop.context import RunContext
from leka.loop.graph import build_graph, run_graph
from leka.loop.routers import make_router

DATA = Path(__file__).parent / "data"


def opt(**options) -> Edit:
    return Edit(level="L2", kind="compile_options", payload={"options": options})


class TableEvaluator:
    """Speedup from the candidate's compile options (a table); raises once at `crash_at` evaluations."""

    def __init__(self, table: dict[str, float], crash_at: int | None = None):
        self.table, self.crash_at, self.calls = table, crash_at, []

    def evaluate_full(self, task, candidate=None, *, profile: bool = False, noise_floor: bool = False, **_):
        if self.crash_at is not None and len(self.calls) + 1 == self.crash_at:
            self.crash_at = None
            raise RuntimeError("the evaluator died (simulated kill)")
        key = json.dumps(candidate.target_opts, sort_keys=True)
        self.calls.append(key)
        sp = self.table.get(key, 1.0)
        return EvalResult(task=task.id, compiled=True, correct=True, speedup=sp, timing_valid=True,
                          t_candidate_s=1e-3 / sp, t_baseline_s=1e-3, wall_s=0.0), None


class ScriptedAgent:
    """Returns the next list of its script on each call; nothing once the script is used up."""

    def __init__(self, level: str, script: list[list[Edit]]):
        self.level, self.script, self.calls = level, list(script), 0

    def propose(self, candidate, context):
        self.calls += 1
        return self.script.pop(0) if self.script else []


def make_ctx(tmp_path: Path, agents: dict, evaluator, *sets: str) -> RunContext:
    task = load_task_file(DATA / "tiny_task.py")
    cfg = load_config([], ["run.budget_s=600", "run.seed=0", *sets])
    root = ir.Root(task=task, text="# root relax text (never parsed: the evaluator is a table)\n",
                   params={}, n_inputs=1, model=None)
    all_agents = {lv: agents.get(lv, ScriptedAgent(lv, [])) for lv in ("L0", "L1", "L2")}
    return RunContext(cfg=cfg, task=task, run_dir=tmp_path, tree=Tree(tmp_path, defer=cfg.run.defer_followups),
                      evaluator=evaluator, agents=all_agents, router=make_router(cfg), root=root)


def expanded(tree: Tree) -> list[int]:
    """Parents in the order their children were made."""
    return list(dict.fromkeys(n.parent for n in tree.nodes() if n.parent is not None))


def test_graph_has_a_node_per_level():
    g = build_graph().compile()
    assert {"init", "sense", "route", "l0", "l1", "l2", "evaluate", "select", "finish"} <= set(g.get_graph().nodes)


def test_budget_stop_and_ties_broken_by_node_id(tmp_path):
    table = {'{"opt-level": 1}': 2.0, '{"opt-level": 2}': 2.0, '{"fast-math": true, "opt-level": 1}': 3.0}
    l2 = ScriptedAgent("L2", [[opt(**{"opt-level": 1}), opt(**{"opt-level": 2})], [opt(**{"fast-math": True})],
                              [opt(**{"fast-math-nsz": True})]])
    ev = TableEvaluator(table)
    ctx = make_ctx(tmp_path, {"L2": l2}, ev, "run.routing=fixed:L2", "run.max_evals=4", "run.explore=0")
    final = run_graph(ctx)
    assert final["evals"] == 4 and final["stop_reason"] == "evaluation budget of 4 used"
    nodes = ctx.tree.nodes()
    # root (1) -> 2 (opt 1, 2.0x), 3 (opt 2, 2.0x): a tie inside the noise band, node 2 is expanded first
    assert [(n.id, n.parent) for n in nodes] == [(1, None), (2, 1), (3, 1), (4, 2)]
    assert expanded(ctx.tree) == [1, 2]
    assert nodes[3].result.speedup == 3.0 and ctx.tree.best(1)[0].id == 4
    assert all(n.level == "L2" and n.route_reason == "fixed routing to L2" for n in nodes[1:])
    ctx.tree.close()


def test_exhausted_levels_fall_through_and_stop(tmp_path):
    # the router insists on L0, which has nothing, nor has L1; L2 has one edit and one illegal one;
    # then every level of every node is exhausted
    l2 = ScriptedAgent("L2", [[opt(**{"opt-level": 3}), opt(**{"no-such-option": True})]])
    ctx = make_ctx(tmp_path, {"L2": l2}, TableEvaluator({}), "run.routing=fixed:L0", "run.widen_rounds=0")
    final = run_graph(ctx)
    assert final["stop_reason"] == "nothing left to expand"
    nodes = ctx.tree.nodes()
    assert [(n.id, n.parent, n.status) for n in nodes] == [(1, None, "measured"), (2, 1, "measured"),
                                                          (3, 1, "failed")]
    assert "unknown option" in nodes[2].result.error
    assert final["exhausted"] == {"1": ["L0", "L1", "L2"], "2": ["L0", "L1", "L2"]}
    assert final["evals"] == 2  # the illegal edit is never evaluated
    assert nodes[1].route_reason == "fixed routing to L0 | L0 exhausted for this node -> L2"
    assert ctx.agents["L0"].calls == 2 and ctx.agents["L1"].calls == 2  # once per node each
    ctx.tree.close()


class WideningAgent:
    """Nothing in an ordinary round; one new edit per call in a widened one (extra["widen"])."""

    widens = True

    def __init__(self, level: str):
        self.level, self.rounds = level, []

    def propose(self, candidate, context):
        w = context.extra.get("widen", 0)
        self.rounds.append(w)
        return [opt(**{"opt-level": w})] if w else []


def test_no_idle_budget_every_node_exhausted_reopens_them_widened(tmp_path):
    # issue 30: a run whose levels have nothing left keeps going in widened rounds while budget is left
    # (run.widen_rounds), the agents told so; what they tried stays tried, so a round adds only new edits
    table = {'{"opt-level": 1}': 1.5, '{"opt-level": 2}': 1.8}
    l2 = WideningAgent("L2")
    ctx = make_ctx(tmp_path, {"L2": l2}, TableEvaluator(table), "run.routing=fixed:L2", "run.widen_rounds=2")
    final = run_graph(ctx)
    assert final["stop_reason"] == "nothing left to expand (after 2 widened round(s))", final["stop_reason"]
    assert final["widen"] == 2 and final["evals"] == 3  # the root, then one new edit per widened round
    assert ctx.tree.best(1)[0].result.speedup == 1.8
    assert l2.rounds[0] == 0 and set(l2.rounds) == {0, 1, 2}
    ctx.tree.close()
    # without widening the same run stops after the root, with budget left
    l2b = WideningAgent("L2")
    ctx = make_ctx(tmp_path / "b", {"L2": l2b}, TableEvaluator(table), "run.routing=fixed:L2", "run.widen_rounds=0")
    final = run_graph(ctx)
    assert final["stop_reason"] == "nothing left to expand" and final["evals"] == 1 and set(l2b.rounds) == {0}
    ctx.tree.close()
    # nor does it widen for agents that would only repeat themselves (no `widens`: a model-backed one)
    class Plain(WideningAgent):
        widens = False

    l2c = Plain("L2")
    ctx = make_ctx(tmp_path / "c", {"L2": l2c}, TableEvaluator(table), "run.routing=fixed:L2", "run.widen_rounds=2")
    final = run_graph(ctx)
    assert final["stop_reason"] == "nothing left to expand" and set(l2c.rounds) == {0}
    ctx.tree.close()


def test_resume_after_a_crash_evaluates_nothing_twice(tmp_path):
    script = [[opt(**{"opt-level": 1}), opt(**{"opt-level": 2})], [opt(**{"opt-level": 3})]]
    table = {'{"opt-level": 1}': 2.0, '{"opt-level": 2}': 1.5, '{"opt-level": 3}': 2.5}
    ev = TableEvaluator(table, crash_at=3)  # root, node 2, then dies on node 3
    ctx = make_ctx(tmp_path, {"L2": ScriptedAgent("L2", script)}, ev, "run.routing=fixed:L2", "run.max_evals=4")
    with pytest.raises(RuntimeError, match="simulated kill"):
        run_graph(ctx)
    ctx.tree.close()
    assert [n.status for n in Tree(tmp_path).nodes()] == ["measured", "measured", "proposed"]
    # a fresh process: new live objects over the same run folder; the agent's first list was used
    ctx2 = make_ctx(tmp_path, {"L2": ScriptedAgent("L2", script[1:])}, ev, "run.routing=fixed:L2",
                    "run.max_evals=4")
    final = run_graph(ctx2, resume=True)
    assert ev.calls == ["{}", '{"opt-level": 1}', '{"opt-level": 2}', '{"opt-level": 3}']
    assert [n.status for n in ctx2.tree.nodes()] == ["measured"] * 4 and final["done"]
    # node 2 was evaluated inside the evaluate step that crashed, whose state update was never
    # checkpointed: the resumed step counts it from the tree
    assert final["evals"] == 4
    assert ctx2.tree.nodes()[3].parent == 2  # the best (2.0x) was expanded after the resume
    assert run_graph(ctx2, resume=True)["done"]  # resuming a finished run changes nothing
    assert len(ctx2.tree.nodes()) == 4
    ctx2.tree.close()


def test_a_child_is_evaluated_and_expanded_as_one_candidate(tmp_path):
    """The candidate `propose` made is the one evaluated, routed and expanded: not parsed from
    candidate.json again at each step; the tree's copy reads back equal to it."""

    class Seeing(ScriptedAgent):
        def propose(self, candidate, context):
            self.seen = [*getattr(self, "seen", []), candidate]
            return super().propose(candidate, context)

    class SeeingEvaluator(TableEvaluator):
        def evaluate_full(self, task, candidate=None, *, profile: bool = False, noise_floor: bool = False, **_):
            self.seen = [*getattr(self, "seen", []), candidate]
            return super().evaluate_full(task, candidate, profile=profile)

    l2 = Seeing("L2", [[opt(**{"opt-level": 1})], [opt(**{"opt-level": 2})]])
    ev = SeeingEvaluator({'{"opt-level": 1}': 2.0, '{"opt-level": 2}': 3.0})
    ctx = make_ctx(tmp_path, {"L2": l2}, ev, "run.routing=fixed:L2", "run.max_evals=3")
    run_graph(ctx)
    assert [(n.id, n.parent) for n in ctx.tree.nodes()] == [(1, None), (2, 1), (3, 2)]
    assert l2.seen[0] is ev.seen[0] and l2.seen[1] is ev.seen[1]  # root, then node 2: one object each
    stored = ir.Candidate.model_validate_json(ctx.tree.artifact(2, "candidate.json"))
    assert stored == ev.seen[1] and stored.target_opts == {"opt-level": 1}
    ctx.tree.close()


class SleepingEvaluator(TableEvaluator):
    """Each evaluation costs `fixed` seconds plus its timing phase (the timing budget it is given, else
    evaluator.timing_budget_s), slept for real; it records the timing budgets it was given."""

    def __init__(self, table: dict[str, float], fixed: float, timing_s: float):
        super().__init__(table)
        self.fixed, self.timing_s, self.budgets = fixed, timing_s, []

    def evaluate_full(self, task, candidate=None, *, profile: bool = False, noise_floor: bool = False,
                      timing_budget_s=None, **_):
        t = self.timing_s if timing_budget_s is None else min(self.timing_s, timing_budget_s)
        self.budgets.append(timing_budget_s)
        time.sleep(self.fixed + t)
        res, prof = super().evaluate_full(task, candidate, profile=profile)
        res.extra["phase_s"] = {"build": self.fixed / 3, "check": 2 * self.fixed / 3, "time_step": t}
        return res, prof


class EndlessAgent:
    """A new compile option every call: there is always more to evaluate."""

    def __init__(self, level: str):
        self.level, self.n = level, 0

    FLAGS = ("fast-math", "fast-math-contract", "fast-math-reassoc", "fast-math-nnan", "fast-math-ninf",
             "fast-math-nsz", "fast-math-arcp")

    def propose(self, candidate, context):
        self.n += 1
        return [opt(**{f: bool(self.n >> i & 1) for i, f in enumerate(self.FLAGS)})]


def test_a_run_ends_within_5_percent_of_its_budget_the_export_reserved(tmp_path):
    # issue 44: evaluations of 0.35 s (0.05 s build + 0.1 s check + 0.2 s of timing) in a 6 s budget: the
    # loop keeps the export's reserve (1.25 x the build and the child's start, + 0.5 s to link), gives the
    # last evaluation the timing that is left, and ends within 5% of the budget minus that reserve
    ev = SleepingEvaluator({}, fixed=0.15, timing_s=0.2)
    ctx = make_ctx(tmp_path, {"L2": EndlessAgent("L2")}, ev, "run.routing=fixed:L2", "run.budget_s=6",
                   "evaluator.timing_budget_s=0.2")
    final = run_graph(ctx)
    reserve = ctx.final_reserve_s()
    assert 0.5 + 1.25 * 0.05 <= reserve < 0.7 and final["stop_reason"].startswith("wall-clock budget of 6 s used")
    # a sleep overruns by a few ms on a loaded machine: 0.1 s of slack above, none below the 5%
    assert 6.0 * 0.95 - reserve <= final["budget_used_s"] <= 6.0 - reserve + 0.1, (final["budget_used_s"], reserve)
    assert final["evals"] >= 12
    # the plan near the end: what is left after the reserve and one evaluation's fixed cost is the timing;
    # under half a fixed cost left, no evaluation starts
    fixed = ctx.eval_fixed_s()
    go, timing_s = ctx.eval_plan(6.0 - reserve - fixed - 0.1)
    assert go and timing_s == pytest.approx(0.1, abs=1e-6)
    assert ctx.eval_plan(6.0 - reserve - fixed - 1.0) == (True, None)  # the configured timing fits
    assert ctx.eval_plan(6.0 - reserve - 0.4 * fixed) == (False, None)
    ctx.tree.close()


class BareSlowEvaluator(SleepingEvaluator):
    """A candidate with no level state (the root, or an L0 child whose schedules an edit invalidated)
    runs its kernels default-scheduled: its evaluation's fixed cost is `bare` seconds, not `fixed`."""

    def __init__(self, fixed: float, bare: float, timing_s: float):
        super().__init__({}, fixed=fixed, timing_s=timing_s)
        self.bare_s = bare

    def evaluate_full(self, task, candidate=None, **kw):
        base = self.fixed
        if candidate is None or candidate.bare:
            self.fixed = self.bare_s
        try:
            return super().evaluate_full(task, candidate, **kw)
        finally:
            self.fixed = base


def test_a_candidate_without_schedules_is_planned_at_the_roots_cost_not_the_recent_median(tmp_path):
    # issue 44: on a ResNet block at its published size the L1 nodes cost 13 s, and three L0 children that
    # lost every schedule cost 160 s each; planned at the recent median, all three started and the run
    # ended 27% past its budget
    ev = BareSlowEvaluator(fixed=0.05, bare=1.0, timing_s=0.05)
    ctx = make_ctx(tmp_path, {"L2": EndlessAgent("L2")}, ev, "run.routing=fixed:L2", "run.budget_s=4",
                   "evaluator.timing_budget_s=0.05")
    final = run_graph(ctx)
    assert final["evals"] >= 8
    (root,) = ctx.tree.roots()
    scheduled = [n for n in ctx.tree.nodes() if n.parent is not None and n.result is not None][-1]
    assert not ctx.candidate(scheduled.id).bare
    bare = 10_000  # a proposed child with no level state, as an L0 edit that dropped every schedule leaves
    ctx.keep_candidate(bare, ctx.candidate(root.id))
    assert ctx.eval_fixed_s(scheduled.id) == pytest.approx(0.05, abs=0.03)
    assert ctx.eval_fixed_s(bare) == pytest.approx(1.0, abs=0.1)
    # 0.4 s left after the reserve: a scheduled candidate starts, one that costs what the root did does not
    used = 4.0 - ctx.final_reserve_s() - 0.4
    assert ctx.eval_plan(used, scheduled.id)[0] and ctx.eval_plan(used, bare) == (False, None)
    # the nodes record what they were: the next bare one is planned at the latest bare node's cost
    assert all(n.meta.get("bare") is False for n in ctx.tree.nodes() if n.parent is not None)
    ctx.tree.close()


class SlowEndlessAgent(EndlessAgent):
    """EndlessAgent whose every proposal takes `propose_s` (a rule L0 agent on a Level-3 module, a small
    model's call)."""

    def __init__(self, level: str, propose_s: float):
        super().__init__(level)
        self.propose_s = propose_s

    def propose(self, candidate, context):
        time.sleep(self.propose_s)
        return super().propose(candidate, context)


def test_a_proposal_that_leaves_no_room_for_its_evaluation_is_not_started(tmp_path):
    # issue 44: proposals of 2 s, evaluations of 0.35 s, 7 s of budget: after two iterations (0.35 s root,
    # then 2.35 s each) about 1.4 s are left after the export's reserve (less where the root's start was
    # slow: the reserve counts it), enough to start a proposal by the evaluation's plan alone, which then
    # ran past the budget. The loop knows what the level's proposals took and stops instead.
    ev = SleepingEvaluator({}, fixed=0.15, timing_s=0.2)
    ctx = make_ctx(tmp_path, {"L2": SlowEndlessAgent("L2", 2.0)}, ev, "run.routing=fixed:L2", "run.budget_s=7",
                   "evaluator.timing_budget_s=0.2")
    final = run_graph(ctx)
    reserve = ctx.final_reserve_s()
    assert final["budget_used_s"] <= 7.0 - reserve + 0.1, (final["budget_used_s"], reserve)
    assert "less than the L2 agent's proposal (2.0 s)" in final["stop_reason"], final["stop_reason"]
    assert final["evals"] == 3 and 1.9 <= ctx.propose_cost_s(final, "L2") <= 2.3
    ctx.tree.close()


class FiniteWideningAgent(WideningAgent):
    """New edits in the first two widened rounds, nothing after."""

    def propose(self, candidate, context):
        w = context.extra.get("widen", 0)
        self.rounds.append(w)
        return [opt(**{"opt-level": w})] if 0 < w <= 2 else []


def test_widening_goes_on_while_a_round_finds_something_new(tmp_path):
    # issue 44: rounds are not capped at two; the widening ends when a whole round proposed nothing new
    table = {'{"opt-level": 1}': 1.5, '{"opt-level": 2}': 1.8}
    l2 = FiniteWideningAgent("L2")
    ctx = make_ctx(tmp_path, {"L2": l2}, TableEvaluator(table), "run.routing=fixed:L2")
    final = run_graph(ctx)
    assert final["widen"] == 3 and final["evals"] == 3, final
    assert final["stop_reason"] == "nothing left to expand (after 3 widened round(s), the last of which found nothing new)"
    ctx.tree.close()


class ContextRecorder(ScriptedAgent):
    """A scripted agent that keeps the context of each of its calls."""

    def __init__(self, level: str, script: list[list[Edit]]):
        super().__init__(level, script)
        self.contexts = []

    def propose(self, candidate, context):
        self.contexts.append(context)
        return super().propose(candidate, context)


def test_the_agent_context_is_built_once_per_iteration(tmp_path):
    """Issue 48: the route's context is the propose's (its level and reason set), not built a second time."""
    l2 = ContextRecorder("L2", [[opt(**{"opt-level": 1})], [opt(**{"opt-level": 2})], [opt(**{"fast-math": True})]])
    ctx = make_ctx(tmp_path, {"L2": l2}, TableEvaluator({}), "run.routing=fixed:L2", "run.max_evals=4",
                   "run.widen_rounds=0")
    routes: list[dict] = []
    ctx.on_event = lambda kind, info: routes.append(info) if kind == "route" else None
    run_graph(ctx)
    assert len(routes) >= 3 and l2.calls == len(routes)
    assert ctx.contexts_built == len(routes)  # one per route; the propose after it builds none
    assert [c.level for c in l2.contexts] == ["L2"] * l2.calls
    assert all(c.route_reason == "fixed routing to L2" for c in l2.contexts)
    # what the agent saw is what the route built for that node: the children already tried there
    assert all(isinstance(c.tried, set) and c.deadline is not None for c in l2.contexts)
    ctx.tree.close()


def test_idle_budget_goes_to_a_tuning_round_on_the_answer(tmp_path):
    # issue 44: with every level exhausted and budget left, the run does not stop: one last round in which
    # the idle tuner (MetaSchedule, here scripted) works on the answer node's L1, and on the faster child next
    table = {'{"opt-level": 1}': 1.5, '{"opt-level": 3}': 2.0}
    l2 = ScriptedAgent("L2", [[opt(**{"opt-level": 1})]])
    idle = ScriptedAgent("L1", [[opt(**{"opt-level": 3})], []])
    seen: list[int] = []
    orig = idle.propose
    idle.propose = lambda cand, c: (seen.append(c.extra["evals"]), orig(cand, c))[1]
    ctx = make_ctx(tmp_path, {"L2": l2}, TableEvaluator(table), "run.routing=fixed:L2", "run.widen_rounds=0")
    ctx.idle_agent = idle
    final = run_graph(ctx)
    assert final["stop_reason"] == "nothing left to expand and a MetaSchedule round (tuner.when_idle)", final
    nodes = ctx.tree.nodes()
    # root -> 2 (L2 rule edit, 1.5x); the round works on node 2 (the answer) -> 3 (2.0x), then on node 3
    assert [(n.id, n.parent) for n in nodes] == [(1, None), (2, 1), (3, 2)]
    assert idle.calls == 2 and seen == [2, 3] and ctx.agents["L1"].calls == 2  # the rule L1: once per node before
    assert "tuner.when_idle" in nodes[2].route_reason and ctx.tree.answer().id == 3
    assert final["tuning"] is True and final["exhausted"]["3"] == ["L1"]
    ctx.tree.close()
    # without an idle tuner (tuner.when_idle=false, or a model's policy) the same run stops at node 2
    l2b = ScriptedAgent("L2", [[opt(**{"opt-level": 1})]])
    ctx = make_ctx(tmp_path / "b", {"L2": l2b}, TableEvaluator(table), "run.routing=fixed:L2", "run.widen_rounds=0")
    final = run_graph(ctx)
    assert final["stop_reason"] == "nothing left to expand" and final["evals"] == 2
    ctx.tree.close()


def test_the_idle_tuner_is_metaschedule_for_the_rule_policy_only(tmp_path):
    from agents.l1_tune import TunerL1Agent
    from leka.policy import idle_tuner

    task = load_task_file(DATA / "tiny_task.py")
    root = ir.Root(task=task, text="", params={}, n_inputs=1, model=None)
    got = idle_tuner(load_config(), root, tmp_path)
    assert isinstance(got, TunerL1Agent) and got.inner.propose(None, None) == []
    # a model's graph edits may carry PrimFuncs MetaSchedule would build and run outside the sandbox
    for sets in (["run.policy=llm"], ["tuner.when_idle=false"], ["tuner.enabled=true"], ["run.layers=[L0,L2]"]):
        assert idle_tuner(load_config([], sets), root, tmp_path) is None, sets


def test_the_export_reserve_is_the_longer_of_the_answers_build_and_the_roots_cold_one(tmp_path):
    # issue 44: a Level-3 export links the whole library, which no evaluation does: 8-12 s where the best
    # node's build took 3.6-6 s; the root's cold build (6.7-10 s) bounded it in all 19 runs measured
    ctx = make_ctx(tmp_path, {}, TableEvaluator({}))

    def res(sp: float, build: float) -> EvalResult:
        r = EvalResult(task="t", backend="llvm", compiled=True, correct=True, speedup=sp, timing_valid=True)
        r.extra["phase_s"] = {"prepare": 0.1, "build": build, "check": 0.5, "time_step": 2.0}
        return r

    root = ctx.tree.add_node(None, None, None, "r", result=res(1.0, 6.7), meta={"cost_s": 9.8})
    ctx.tree.add_node(root, "L1", opt(**{"opt-level": 1}), "a", result=res(3.0, 3.6), meta={"cost_s": 6.7})
    # the root: start 0.5 + prepare 0.1 + build 6.7 = 7.3 s; the answer's 0.5 + 0.1 + 3.6 = 4.2 s
    assert ctx.final_reserve_s() == pytest.approx(1.25 * 7.3 + 0.5)
    ctx.tree.add_node(root, "L1", opt(**{"opt-level": 2}), "b", result=res(4.0, 9.0), meta={"cost_s": 12.1})
    assert ctx.final_reserve_s() == pytest.approx(1.25 * 9.6 + 0.5)  # a slower-building answer: its own
    ctx.tree.close()
