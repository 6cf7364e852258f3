"""All graph wiring of a LEKA run, in one module (DESIGN.md, "Orchestration").

    init -> sense -> route -> {l0, l1, l2} -> evaluate -> select -> sense ... -> finish

The LangGraph state is small (ids, counters, short strings); candidates, IR and measurements live in
the candidate tree (`RUN_DIR/tree.sqlite`). Checkpoints go to `RUN_DIR/checkpoints.sqlite` after every
node, so a killed run continues with `leka run --resume RUN_DIR`: every node is idempotent against the
tree (a proposed node that was not evaluated yet is evaluated on resume; an evaluated one is not redone).
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from benchmark.evaluator import Evaluator
from benchmark.task import Task
from candidate_tree import Tree
from leka import ir
from leka.config import LekaConfig
from leka.protocols import AgentContext
from leka.types import LEVELS, BudgetExhausted, Edit, EvalResult, edit_digest


class RunState(TypedDict, total=False):
    current: int  # node being expanded
    level: str  # level routed to for `current`
    route_reason: str
    proposed: list[int]  # nodes waiting for evaluation
    exhausted: dict[str, list[str]]  # node id -> levels that had nothing (more) to propose
    expansions: dict[str, int]  # node id -> times expanded
    iteration: int
    budget_used_s: float
    evals: int
    done: bool
    stop_reason: str
    router_state: dict[str, Any]


@dataclass
class RunContext:
    """The live objects of a run (not checkpointed: rebuilt from the run folder on resume)."""

    cfg: LekaConfig
    task: Task
    run_dir: Path
    tree: Tree
    evaluator: Evaluator
    agents: dict[str, Any]
    router: Any
    root: ir.Root
    ledger: Any = None
    on_event: Callable[[str, dict[str, Any]], None] = lambda kind, info: None
    t_mark: float = field(default_factory=time.monotonic)

    @property
    def workdir(self) -> Path:
        return self.run_dir / "work"

    # ---- budget -------------------------------------------------------------------------------
    def tick(self, state: RunState) -> float:
        """Wall clock used so far, across resumes (time before the last checkpoint of a killed run
        is counted; the gap until the resume is not)."""
        now = time.monotonic()
        used = state.get("budget_used_s", 0.0) + (now - self.t_mark)
        self.t_mark = now
        return used

    def over_budget(self, used_s: float, evals: int) -> str | None:
        run = self.cfg.run
        if used_s >= run.budget_s:
            return f"wall-clock budget of {run.budget_s:g} s used"
        if run.max_evals is not None and evals >= run.max_evals:
            return f"evaluation budget of {run.max_evals} used"
        if self.ledger is not None:
            if run.max_llm_calls is not None and self.ledger.calls >= run.max_llm_calls:
                return f"LLM call budget of {run.max_llm_calls} used"
            if run.max_tokens is not None:
                u = self.ledger.usage
                if u.input_tokens + u.output_tokens >= run.max_tokens:
                    return f"LLM token budget of {run.max_tokens} used"
        return None

    def deadline(self, state: RunState) -> float:
        """Absolute monotonic time at which the wall-clock budget ends (for LLM calls)."""
        return self.t_mark + (self.cfg.run.budget_s - state.get("budget_used_s", 0.0))

    # ---- candidates -----------------------------------------------------------------------------
    def candidate(self, nid: int) -> ir.Candidate:
        data = self.tree.artifact(nid, "candidate.json")
        if data is None:
            raise KeyError(f"node {nid} has no candidate.json")
        return ir.Candidate.model_validate_json(data)

    def level_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(LEVELS, 0)
        for n in self.tree.nodes():
            if n.level in counts:
                counts[n.level] += 1
        return counts

    def context_for(self, nid: int, level: str, reason: str, state: RunState) -> AgentContext:
        node = self.tree.get(nid)
        tried = {_digest(n.edit) for n in self.tree.children(nid) if n.edit is not None}
        tried |= {_digest(n.edit) for n in self.tree.lineage(nid) if n.edit is not None}
        from leka import tvm_adapter as A

        target = A.make_target(self.cfg.backend)
        return AgentContext(
            task_id=self.task.id, backend=self.cfg.backend, level=level, route_reason=reason,
            profile=node.profile, profile_text=_profile_text(node.profile),
            lineage_text=lineage_text(self.tree, nid), tried=tried, seed=self.cfg.run.seed + state.get("iteration", 0),
            variants=self.cfg.run.variants_per_call, vector_lanes=A.vector_lanes_fp32(target),
            num_cores=int(A.target_json(target).get("num-cores", 2) or 2),
            extra={"exclude_levels": state.get("exhausted", {}).get(str(nid), []),
                   "level_counts": self.level_counts(), "evals": state.get("evals", 0)},
        )


def _digest(edit: Edit) -> str:
    return edit_digest(edit)


def _profile_text(profile: dict | None) -> str:
    if not profile or "kernels" not in profile:
        return ""
    try:
        from profilers.report import ProfileReport

        return ProfileReport.model_validate(profile).text()
    except Exception:  # noqa: BLE001 - an old or partial profile: say nothing rather than fail
        return ""


def lineage_text(tree: Tree, nid: int, max_lines: int = 12) -> str:
    lines = []
    for n in tree.lineage(nid)[-max_lines:]:
        sp = f"{n.result.speedup:.2f}x" if n.result and n.result.speedup else "-"
        what = f"{n.level} {n.edit.kind} {n.edit.target or n.edit.payload.get('name', '')}" if n.edit else "root"
        lines.append(f"#{n.id} {what}: {n.status} {sp}")
    fails = [c for c in tree.children(nid) if c.status == "failed"][-3:]
    for c in fails:
        err = (c.result.error or "")[:160] if c.result else ""
        lines.append(f"  tried #{c.id} {c.level} {c.edit.kind if c.edit else ''}: failed: {err}")
    return "\n".join(lines)


def edit_summary(edit: Edit | None) -> str:
    if edit is None:
        return "root (default lowering)"
    p = edit.payload
    if edit.kind == "pass":
        return f"pass {p.get('name')}"
    if edit.kind == "trace":
        prims = [s.get("prim") for s in p.get("trace", [])]
        return f"trace on {edit.target}: {len(prims)} steps ({', '.join(dict.fromkeys(prims))})"
    if edit.kind == "source":
        return f"{p.get('language')} source for {edit.target} ({len(p.get('text', ''))} chars)"
    return f"{edit.kind} on {edit.target or 'module'}"


# --------------------------------------------------------------------------------------- nodes
def build_graph(ctx: RunContext) -> StateGraph:
    cfg = ctx.cfg
    layers = [lv for lv in LEVELS if lv in cfg.run.layers]

    def init(state: RunState) -> RunState:
        if ctx.tree.count():  # resumed, or a second start on the same folder: the root exists
            roots = ctx.tree.roots()
            return {"current": roots[0].id, **({} if state.get("current") else _fresh_state())}
        cand = ir.root_candidate(ctx.task, cfg.backend, ctx.root)
        res, prof = ctx.evaluator.evaluate_full(ctx.task, cand, profile=True)
        nid = ctx.tree.add_node(None, None, None, cand.digest, result=res, profile=prof,
                                artifacts=_artifacts(cand), meta={"eval_s": res.wall_s})
        ctx.on_event("evaluated", {"node": nid, "result": res, "level": None})
        return {**_fresh_state(), "current": nid, "evals": 1, "budget_used_s": ctx.tick(state)}

    def sense(state: RunState) -> RunState:
        used = ctx.tick(state)
        stop = ctx.over_budget(used, state.get("evals", 0))
        if stop:
            return {"budget_used_s": used, "done": True, "stop_reason": stop}
        ctx.on_event("sense", {"node": state["current"], "budget_used_s": used})
        return {"budget_used_s": used}

    def route(state: RunState) -> RunState:
        nid = state["current"]
        excluded = state.get("exhausted", {}).get(str(nid), [])
        open_levels = [lv for lv in layers if lv not in excluded]
        if not open_levels:
            return {"level": "", "route_reason": f"node {nid}: every enabled level has nothing more to propose"}
        node = ctx.tree.get(nid)
        cand = ctx.candidate(nid)
        agent_ctx = ctx.context_for(nid, "", "", state)
        try:
            level, reason = _route(ctx, cand, node.profile, agent_ctx, open_levels, state)
        except BudgetExhausted as e:
            return {"done": True, "stop_reason": str(e), "level": ""}
        ctx.on_event("route", {"node": nid, "level": level, "reason": reason})
        return {"level": level, "route_reason": reason,
                "router_state": ctx.router.state() if hasattr(ctx.router, "state") else {}}

    def make_level_node(level: str):
        def propose(state: RunState) -> RunState:
            nid = state["current"]
            cand = ctx.candidate(nid)
            agent_ctx = ctx.context_for(nid, level, state.get("route_reason", ""), state)
            agent = ctx.agents[level]
            try:
                if ctx.ledger is not None:
                    with ctx.ledger.tagged(level):
                        mark = ctx.ledger.mark()
                        edits = agent.propose(cand, agent_ctx) or []
                        usage = ctx.ledger.usage_since(mark).model_dump()
                else:
                    edits, usage = agent.propose(cand, agent_ctx) or [], None
            except BudgetExhausted as e:
                return {"done": True, "stop_reason": str(e), "proposed": []}
            proposed: list[int] = []
            seen: set[str] = set()
            for edit in edits[: max(1, cfg.run.variants_per_call)]:
                d = _digest(edit)
                if d in agent_ctx.tried or d in seen:
                    continue
                seen.add(d)
                out = _apply(ctx, cand, edit)
                meta = {"llm_usage": usage} if usage else {}
                if not out.ok:
                    res = EvalResult(task=ctx.task.id, backend=cfg.backend, error_kind="compile", error=out.error)
                    child = ctx.tree.add_node(nid, level, edit, f"illegal:{d}", result=res,
                                              route_reason=state.get("route_reason", ""), meta=meta)
                    ctx.on_event("illegal", {"node": child, "level": level, "error": out.error})
                    continue
                new = out.candidate
                if ctx.tree.by_hash(new.digest) is not None:
                    continue  # the same candidate exists (reached another way): nothing new to learn
                meta.update({"carried": out.carried, "invalidated": out.invalidated})
                child = ctx.tree.add_node(nid, level, edit, new.digest, route_reason=state.get("route_reason", ""),
                                          artifacts=_artifacts(new), meta=meta)
                proposed.append(child)
            upd: RunState = {"proposed": proposed}
            if not proposed:
                ex = dict(state.get("exhausted", {}))
                ex[str(nid)] = sorted(set(ex.get(str(nid), [])) | {level})
                upd["exhausted"] = ex
            ctx.on_event("proposed", {"node": nid, "level": level, "n": len(proposed)})
            return upd

        propose.__name__ = level.lower()
        return propose

    def evaluate(state: RunState) -> RunState:
        evals = state.get("evals", 0)
        # evaluate whatever is still `proposed` (this also picks up the work of a killed run)
        pending = [n for n in (state.get("proposed") or []) if ctx.tree.get(n).status == "proposed"]
        for nid in pending:
            used = ctx.tick(state)
            state = {**state, "budget_used_s": used}
            if ctx.over_budget(used, evals):
                break
            cand = ctx.candidate(nid)
            res, prof = ctx.evaluator.evaluate_full(ctx.task, cand, profile=True)
            node = ctx.tree.update(nid, result=res, profile=prof, meta={"eval_s": res.wall_s})
            evals += 1
            ctx.on_event("evaluated", {"node": nid, "result": res, "level": node.level, "status": node.status})
        exp = dict(state.get("expansions", {}))
        exp[str(state["current"])] = exp.get(str(state["current"]), 0) + 1
        return {"evals": evals, "proposed": [], "expansions": exp, "budget_used_s": ctx.tick(state)}

    def select(state: RunState) -> RunState:
        used = ctx.tick(state)
        stop = ctx.over_budget(used, state.get("evals", 0))
        if stop:
            return {"budget_used_s": used, "done": True, "stop_reason": stop}
        nxt = choose_next(ctx.tree, state, layers, cfg.run.explore)
        if nxt is None:
            return {"budget_used_s": used, "done": True, "stop_reason": "nothing left to expand"}
        return {"current": nxt, "iteration": state.get("iteration", 0) + 1, "budget_used_s": used,
                "level": "", "route_reason": ""}

    def finish(state: RunState) -> RunState:
        ctx.tree.expire_pending()
        return {"done": True, "budget_used_s": ctx.tick(state)}

    g = StateGraph(RunState)
    g.add_node("init", init)
    g.add_node("sense", sense)
    g.add_node("route", route)
    for lv in LEVELS:
        g.add_node(lv.lower(), make_level_node(lv))
    g.add_node("evaluate", evaluate)
    g.add_node("select", select)
    g.add_node("finish", finish)
    g.add_edge(START, "init")
    g.add_edge("init", "sense")
    g.add_conditional_edges("sense", lambda s: "finish" if s.get("done") else "route", ["finish", "route"])
    g.add_conditional_edges(
        "route", lambda s: "finish" if s.get("done") else (s["level"].lower() if s.get("level") else "select"),
        ["finish", "select", "l0", "l1", "l2"])
    for lv in LEVELS:
        g.add_conditional_edges(
            lv.lower(), lambda s: "finish" if s.get("done") else ("evaluate" if s.get("proposed") else "route"),
            ["finish", "evaluate", "route"])
    g.add_edge("evaluate", "select")
    g.add_conditional_edges("select", lambda s: "finish" if s.get("done") else "sense", ["finish", "sense"])
    g.add_edge("finish", END)
    return g


def _fresh_state() -> RunState:
    return {"proposed": [], "exhausted": {}, "expansions": {}, "iteration": 0, "evals": 0, "done": False,
            "stop_reason": "", "level": "", "route_reason": ""}


def _artifacts(c: ir.Candidate) -> dict[str, str]:
    arts = {"candidate.json": c.model_dump_json(), "relax.py": c.relax_text}
    for key, e in c.l1.items():
        arts[f"l1_{e.func}_{key[:8]}.json"] = json.dumps(e.model_dump(), indent=1)
    for key, e in c.l2.items():
        ext = {"cpp": "cc", "llvm": "ll", "cuda": "cu", "opencl": "cl"}[e.language]
        arts[f"l2_{e.kernel}_{key[:8]}.{ext}"] = e.text
    return arts


def _apply(ctx: RunContext, cand: ir.Candidate, edit: Edit):
    """Apply without a build check: the evaluation builds the candidate anyway (a build failure comes
    back as a failed node with error_kind "compile"), and at Level 3 a second build in this process
    costs as much as the rest of the evaluation. An LLM edit was build-checked by its agent already
    (leka.run `check`); apply_edit's memo hands that outcome back here."""
    from leka.edits import apply_edit

    return apply_edit(cand, edit, workdir=ctx.workdir, root_params=ctx.root.params, build_check=False)


def _route(ctx: RunContext, cand, profile, agent_ctx: AgentContext, open_levels: list[str],
           state: RunState) -> tuple[str, str]:
    router = ctx.router
    if hasattr(router, "load_state") and state.get("router_state"):
        router.load_state(state["router_state"])
    if hasattr(router, "levels") and not hasattr(router, "load_state"):  # the LLM router
        level, reason = router.route(cand, agent_ctx)
    else:
        r = router.route(cand, profile, agent_ctx)
        level, reason = r.level, r.reason
    if level not in open_levels:  # the router's pick has nothing left here: take the next open level
        alt = open_levels[0]
        reason = f"{reason} | {level} exhausted for this node -> {alt}"
        level = alt
    return level, reason


NOISE_BAND = 0.05  # ~5%: the paired-timing spread the evaluator accepts on a quiet machine


def choose_next(tree: Tree, state: RunState, layers: list[str], explore: float) -> int | None:
    """Best-first with exploration: log-speedup plus a UCB-style bonus for rarely expanded nodes.
    Nodes whose enabled levels all had nothing left are skipped. Speedups are compared in bands of
    NOISE_BAND (log scale): differences inside the timing noise are ties, broken by node id, so that
    re-running with the same seed on the same machine mostly expands the same nodes."""
    exhausted = state.get("exhausted", {})
    expansions = state.get("expansions", {})
    total = 1 + sum(expansions.values())
    best, best_score = None, -math.inf
    for n in tree.frontier():
        if set(layers) <= set(exhausted.get(str(n.id), [])):
            continue
        sp = n.result.speedup if (n.result and n.result.speedup) else 1.0
        k = expansions.get(str(n.id), 0)
        score = round(math.log(max(sp, 1e-6)) / NOISE_BAND) * NOISE_BAND + explore * math.sqrt(math.log(total + 1) / (1 + k))
        if score > best_score + 1e-12:
            best, best_score = n.id, score
    return best


# --------------------------------------------------------------------------------------- driver
def open_checkpointer(run_dir: Path) -> SqliteSaver:
    conn = sqlite3.connect(str(run_dir / "checkpoints.sqlite"), check_same_thread=False)
    return SqliteSaver(conn)


def run_graph(ctx: RunContext, *, resume: bool = False) -> RunState:
    """Run (or resume) to the end; returns the final state."""
    saver = open_checkpointer(ctx.run_dir)
    app = build_graph(ctx).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "leka"}, "recursion_limit": 1_000_000}
    final: RunState = {}
    snapshot = app.get_state(config)
    inp = None if (resume and snapshot.next) else ({} if not snapshot.next else None)
    if resume and not snapshot.next and snapshot.values.get("done"):
        return snapshot.values  # already finished
    for chunk in app.stream(inp, config, stream_mode="values"):
        final = chunk
    saver.conn.close()
    return final


def make_router(cfg: LekaConfig, provider=None, views=None, deadline=None):
    from agents.hw_sensing import HardwareSensingAgent

    if cfg.run.policy == "llm" and cfg.run.routing == "profile" and provider is not None:
        from agents.llm_agent import LLMRouter

        return LLMRouter(provider, views=views or (lambda c, x: {}), levels=[lv for lv in LEVELS if lv in cfg.run.layers],
                         max_repairs=cfg.llm.max_repairs, deadline=deadline or (lambda: None),
                         context_tokens=cfg.llm.context_tokens, prompt_tokens=cfg.llm.prompt_tokens)
    return HardwareSensingAgent(cfg.run.routing, cfg.run.layers, cfg.run.seed)
