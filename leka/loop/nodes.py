"""The nodes of the loop: plain functions of (state, runtime) -> state update. `runtime.context` is
the run's `RunContext`. Every node is idempotent against the tree: a proposed node that was not
evaluated yet is evaluated on resume; an evaluated one is not redone."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from langgraph.runtime import Runtime

from leka import ir
from leka.core.types import BudgetExhausted, Edit, EvalResult, edit_digest
from leka.ir.edits import EditOutcome, apply_edit
from leka.ir.files import candidate_files
from leka.loop.context import RunContext
from leka.loop.select import choose_next
from leka.loop.state import RunState, fresh_state

Node = Callable[[RunState, Runtime[RunContext]], RunState]


def init(state: RunState, runtime: Runtime[RunContext]) -> RunState:
    """Evaluate the root (once: a resumed run or a second start on the same folder finds it)."""
    ctx = runtime.context
    if ctx.tree.count():
        roots = ctx.tree.roots()
        return {"current": roots[0].id, **({} if state.get("current") else fresh_state())}
    cand = ir.root_candidate(ctx.task, ctx.cfg.backend, ctx.root)
    # the root is the baseline's own program: its evaluation also states the run's noise floor
    t0 = _start(ctx)
    res, prof = ctx.evaluator.evaluate_full(ctx.task, cand, profile=True, noise_floor=True, is_root=True)
    nid = ctx.tree.add_node(None, None, None, cand.digest, result=res, profile=prof,
                            artifacts=artifacts(cand), meta={"eval_s": res.wall_s, "cost_s": _cost(ctx, t0)})
    ctx.keep_candidate(nid, cand)
    ctx.on_event("evaluated", {"node": nid, "result": res, "level": None})
    return {**fresh_state(), "current": nid, "evals": 1, "budget_used_s": ctx.tick(state)}


def sense(state: RunState, runtime: Runtime[RunContext]) -> RunState:
    """Check the budget; the profile of the current node is already in the tree."""
    ctx = runtime.context
    used = ctx.tick(state)
    stop = ctx.over_budget_reserved(used, state.get("evals", 0))
    if stop:
        return {"budget_used_s": used, "done": True, "stop_reason": stop}
    ctx.on_event("sense", {"node": state["current"], "budget_used_s": used})
    return {"budget_used_s": used}


def route(state: RunState, runtime: Runtime[RunContext]) -> RunState:
    """Ask the router for a level among those not exhausted for this node."""
    ctx = runtime.context
    nid = state["current"]
    excluded = state.get("exhausted", {}).get(str(nid), [])
    open_levels = [lv for lv in ctx.layers if lv not in excluded]
    if not open_levels:
        return {"level": "", "route_reason": f"node {nid}: every enabled level has nothing more to propose"}
    if state.get("tuning"):  # the last round is L1's alone: no router call
        if "L1" in excluded:
            return {"level": "", "route_reason": f"node {nid}: no kernel left to tune"}
        reason = f"node {nid}: every level had nothing more; MetaSchedule tunes its kernels (tuner.when_idle)"
        ctx.on_event("route", {"node": nid, "level": "L1", "reason": reason})
        return {"level": "L1", "route_reason": reason}
    cand = ctx.candidate(nid)
    agent_ctx = ctx.routed_context(nid, state)
    ctx.router.load_state(state.get("router_state") or {})
    try:
        level, reason = ctx.router.route(cand, ctx.tree.get(nid).profile, agent_ctx)
    except BudgetExhausted as e:
        return {"done": True, "stop_reason": str(e), "level": ""}
    if level not in open_levels:  # the router's pick has nothing left here: take the next open level
        reason = f"{reason} | {level} exhausted for this node -> {open_levels[0]}"
        level = open_levels[0]
    ctx.on_event("route", {"node": nid, "level": level, "reason": reason})
    return {"level": level, "route_reason": reason, "router_state": ctx.router.state()}


def _ask_agent(ctx: RunContext, level: str, cand: ir.Candidate, agent_ctx,
               tuning: bool = False) -> tuple[list[Edit], dict | None]:
    agent = ctx.idle_agent if tuning and level == "L1" and ctx.idle_agent is not None else ctx.agents[level]
    if ctx.ledger is None:
        return agent.propose(cand, agent_ctx) or [], None
    with ctx.ledger.tagged(level):
        mark = ctx.ledger.mark()
        edits = agent.propose(cand, agent_ctx) or []
        return edits, ctx.ledger.usage_since(mark).model_dump()


def _apply(ctx: RunContext, cand: ir.Candidate, edit: Edit) -> EditOutcome:
    """Apply without a build check: the evaluation builds the candidate anyway (a build failure comes
    back as a failed node with error_kind "compile"), and at Level 3 a second build in this process
    costs as much as the rest of the evaluation. An LLM edit was build-checked by its agent already
    (leka.policy `check_edit`); apply_edit's memo hands that outcome back here."""
    return apply_edit(cand, edit, workdir=ctx.workdir, root_params=ctx.root.params, build_check=False)


def propose(state: RunState, runtime: Runtime[RunContext], level: str) -> RunState:
    """The routed level's agent proposes edits; each new candidate becomes a `proposed` node (an edit
    that does not apply becomes a failed node at once)."""
    ctx = runtime.context
    nid = state["current"]
    used = ctx.tick(state)
    cost = ctx.propose_cost_s(state, level)
    if cost > 0 and not ctx.eval_plan(used + cost)[0]:
        left = ctx.cfg.run.budget_s - used - ctx.final_reserve_s()
        return {"done": True, "proposed": [], "budget_used_s": used,
                "stop_reason": f"wall-clock budget of {ctx.cfg.run.budget_s:g} s used: {left:.0f} s left after the "
                               f"export's reserve, less than the {level} agent's proposal ({cost:.1f} s) and half an "
                               f"evaluation ({ctx.eval_fixed_s():.0f} s)"}
    t0, gate0 = time.monotonic(), ctx.gate_wait_s
    cand = ctx.candidate(nid)
    reason = state.get("route_reason", "")
    agent_ctx = ctx.propose_context(nid, level, reason, state)
    try:
        # a rule agent computes its proposals here, on the cores other jobs may be timing on
        with ctx.cpu_shared(local_work=ctx.cfg.run.policy == "rules"):
            edits, usage = _ask_agent(ctx, level, cand, agent_ctx, tuning=bool(state.get("tuning")))
    except BudgetExhausted as e:
        return {"done": True, "stop_reason": str(e), "proposed": [], "budget_used_s": ctx.tick({**state, "budget_used_s": used})}
    proposed: list[int] = []
    seen: set[str] = set()
    for edit in edits[: max(1, ctx.cfg.run.variants_per_call)]:
        d = edit_digest(edit)
        if d in agent_ctx.tried or d in seen:
            continue
        seen.add(d)
        with ctx.cpu_shared():
            out = _apply(ctx, cand, edit)
        meta: dict[str, Any] = {"llm_usage": usage} if usage else {}
        if not out.ok:
            res = EvalResult(task=ctx.task.id, backend=ctx.cfg.backend, error_kind=out.error_kind or "compile",
                             error=out.error)
            child = ctx.tree.add_node(nid, edit.level, edit, f"illegal:{d}", result=res, route_reason=reason, meta=meta)
            ctx.on_event("illegal", {"node": child, "level": edit.level, "error": out.error})
            continue
        new = out.candidate
        if ctx.tree.by_hash(new.digest) is not None:
            continue  # the same candidate exists (reached another way): nothing new to learn
        meta.update({"carried": out.carried, "invalidated": out.invalidated})
        # the edit's own level: a `flat` agent (experiment arm) proposes any level from one slot
        child = ctx.tree.add_node(nid, edit.level, edit, new.digest, route_reason=reason,
                                  artifacts=artifacts(new), meta=meta)
        ctx.keep_candidate(child, new)
        proposed.append(child)
    hist = dict(state.get("propose_s") or {})
    hist[level] = [*hist.get(level, [])[-2:], round(max(0.0, time.monotonic() - t0 - (ctx.gate_wait_s - gate0)), 3)]
    upd: RunState = {"proposed": proposed, "propose_s": hist, "budget_used_s": ctx.tick({**state, "budget_used_s": used})}
    if proposed and state.get("widen") and not state.get("tuning"):
        upd["widen_fresh"] = True  # this widened round found something new: another may too
    if not proposed:
        ex = dict(state.get("exhausted", {}))
        ex[str(nid)] = sorted(set(ex.get(str(nid), [])) | {level})
        upd["exhausted"] = ex
    ctx.on_event("proposed", {"node": nid, "level": level, "n": len(proposed)})
    return upd


def level_node(level: str) -> Node:
    """The graph node of one level: `propose` bound to it."""

    def node(state: RunState, runtime: Runtime[RunContext]) -> RunState:
        return propose(state, runtime, level)

    node.__name__ = level.lower()
    return node


def evaluate(state: RunState, runtime: Runtime[RunContext]) -> RunState:
    """Evaluate whatever is still `proposed` (this also picks up the work of a killed run)."""
    ctx = runtime.context
    evals = state.get("evals", 0)
    proposed = state.get("proposed") or []
    pending = [n for n in proposed if ctx.tree.get(n).status == "proposed"]
    # on a resume, nodes of this batch evaluated after the last checkpoint (before the kill) count too
    evals += len(proposed) - len(pending)
    for nid in pending:
        used = ctx.tick(state)
        state = {**state, "budget_used_s": used}
        go, timing_s = ctx.eval_plan(used, nid)
        if not go or ctx.over_budget(used, evals):
            break
        t0 = _start(ctx)
        cand = ctx.candidate(nid)
        res, prof = ctx.evaluator.evaluate_full(ctx.task, cand, profile=True, timing_budget_s=timing_s,
                                                decide_below=_parent_speedup(ctx, nid), **_reuse(ctx))
        # a bare candidate costs what the root does (RunContext.eval_fixed_s)
        node = ctx.tree.update(nid, result=res, profile=prof, meta={"eval_s": res.wall_s, "cost_s": _cost(ctx, t0),
                                                                    "bare": cand.bare})
        evals += 1
        ctx.on_event("evaluated", {"node": nid, "result": res, "level": node.level, "status": node.status})
    exp = dict(state.get("expansions", {}))
    exp[str(state["current"])] = exp.get(str(state["current"]), 0) + 1
    return {"evals": evals, "proposed": [], "expansions": exp, "budget_used_s": ctx.tick(state)}


def select(state: RunState, runtime: Runtime[RunContext]) -> RunState:
    ctx = runtime.context
    used = ctx.tick(state)
    stop = ctx.over_budget_reserved(used, state.get("evals", 0))
    if stop:
        return {"budget_used_s": used, "done": True, "stop_reason": stop}
    if not ctx.eval_plan(used)[0]:
        return {"budget_used_s": used, "done": True,
                "stop_reason": f"wall-clock budget of {ctx.cfg.run.budget_s:g} s used: {ctx.cfg.run.budget_s - used:.0f} s "
                               f"left, less than half an evaluation ({ctx.eval_fixed_s():.0f} s) after the export's reserve"}
    if state.get("tuning"):
        nxt = _tuning_node(ctx, state)
        if nxt is None:
            return {"budget_used_s": used, "done": True, "stop_reason": _idle_stop(state, tuned=True)}
        return {"current": nxt, "iteration": state.get("iteration", 0) + 1, "budget_used_s": used,
                "level": "", "route_reason": ""}
    # greedy search (an ablation): no exploration bonus, so only the current best node is expanded
    explore = 0.0 if ctx.cfg.run.search == "greedy" else ctx.cfg.run.explore
    nxt = choose_next(ctx.tree, state, ctx.layers, explore)
    upd: RunState = {}
    widen = state.get("widen", 0)
    # only where an enabled level's agent has more to offer when widened (its `widens`: the rule L1
    # agent's wider grids); a model-backed agent asked again would repeat its answer at a cost
    # a widened round that found nothing new at any node ends the widening: the next would find nothing too
    spent = widen > 0 and not state.get("widen_fresh", False)
    if nxt is None and not spent and widen < ctx.cfg.run.widen_rounds and any(
            getattr(ctx.agents.get(lv), "widens", False) for lv in ctx.layers):
        # every node had nothing more at every level, and budget is left: reopen them, widened (the
        # agents see extra["widen"]); what was tried stays tried, so a round adds only what is new
        upd = {"widen": widen + 1, "exhausted": {}, "widen_fresh": False}
        nxt = choose_next(ctx.tree, {**state, "exhausted": {}}, ctx.layers, explore)
        ctx.on_event("widen", {"round": widen + 1, "node": nxt})
    if (nxt is None and ctx.idle_agent is not None and "L1" in ctx.layers
            and ctx.cfg.run.budget_s - used - ctx.final_reserve_s() >= ctx.cfg.tuner.min_left_s):
        # nothing more from any agent, budget left: MetaSchedule gets the rest of it (issue 44: runs stopped
        # at a third of their budget with kernels far from their roof)
        nxt = _tuning_node(ctx, {**state, "exhausted": {}})
        if nxt is not None:
            upd = {"tuning": True, "exhausted": {}}
            ctx.on_event("tune_round", {"node": nxt})
    if nxt is None:
        return {"budget_used_s": used, "done": True, "stop_reason": _idle_stop(state, tuned=False)}
    return {**upd, "current": nxt, "iteration": state.get("iteration", 0) + 1, "budget_used_s": used,
            "level": "", "route_reason": ""}


def _idle_stop(state: RunState, tuned: bool) -> str:
    widen, spent = state.get("widen", 0), state.get("widen", 0) > 0 and not state.get("widen_fresh", False)
    why = "nothing left to expand" + (f" (after {widen} widened round(s)" + (", the last of which found nothing new)"
                                                                          if spent else ")") if widen else "")
    return why + (" and a MetaSchedule round (tuner.when_idle)" if tuned else "")


def _tuning_node(ctx: RunContext, state: RunState) -> int | None:
    """The node the last round works on: the run's answer, while its L1 agent (the idle tuner) has kernels
    left to tune; a tuned child that is faster becomes the answer and is worked on next."""
    ans = ctx.tree.answer()
    if ans is None or "L1" in state.get("exhausted", {}).get(str(ans.id), []):
        return None
    return ans.id


def finish(state: RunState, runtime: Runtime[RunContext]) -> RunState:
    runtime.context.tree.expire_pending()
    return {"done": True, "budget_used_s": runtime.context.tick(state)}


def _cost(ctx: RunContext, t0: tuple[float, float]) -> float:
    """The loop's wall time for one evaluation since `t0` (`_start`), less the slot waits the budget does
    not count: what the run's budget paid for it."""
    waited = float(getattr(ctx.evaluator, "wait_s", 0.0)) - t0[1]
    return round(max(0.0, time.monotonic() - t0[0] - max(0.0, waited)), 3)


def _start(ctx: RunContext) -> tuple[float, float]:
    return time.monotonic(), float(getattr(ctx.evaluator, "wait_s", 0.0))


def _reuse(ctx: RunContext) -> dict:
    """The root's baseline samples where its evaluation timed it alone (a slow task whose baseline is the
    root's own program: benchmark/judge/timing.py alone_for): every later evaluation is timed against them."""
    roots = ctx.tree.roots()
    r = roots[0].result if roots else None
    samples = r.extra.get("baseline_samples") if r is not None and r.correct else None
    return {"reuse_baseline": samples} if samples else {}


def _parent_speedup(ctx: RunContext, nid: int) -> float | None:
    """The parent's validly timed speedup: a child decided to be slower than it needs no more pairs
    (benchmark/judge/timing.py decided_below). None where the parent has no trusted speedup."""
    node = ctx.tree.get(nid)
    if node.parent is None:
        return None
    r = ctx.tree.get(node.parent).result
    if r is None or not r.correct or not r.timing_valid or not r.speedup:
        return None
    return float(r.speedup)


def artifacts(c: ir.Candidate) -> dict[str, str | bytes]:
    """The files stored with a node: the candidate's on-disk layout as a record (leka.ir.files), so a
    node's folder (RUN_DIR/nodes/N) is a candidate folder with its candidate.json."""
    return candidate_files(c, record=True)
