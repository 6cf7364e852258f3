"""`RunContext`: the live objects of a run, handed to every node as LangGraph's run context (not
checkpointed: rebuilt from the run folder on resume)."""

from __future__ import annotations

import copy
import dataclasses
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.judge import Hold, cpu_gate
from candidate_tree import Tree
from leka import ir
from leka import tvm_adapter as A
from leka.core.config import LekaConfig
from leka.core.levels import level_names
from leka.core.protocols import Agent, AgentContext, Evaluator, Router
from leka.core.task import Task
from leka.core.types import Edit, edit_digest
from leka.loop.state import RunState

CANDIDATES_KEPT = 16  # more than a batch of children (variants_per_call) plus the node they came from


@dataclass
class RunContext:
    cfg: LekaConfig
    task: Task
    run_dir: Path
    tree: Tree
    evaluator: Evaluator
    agents: dict[str, Agent]
    router: Router
    root: ir.Root
    ledger: Any = None
    on_event: Callable[[str, dict[str, Any]], None] = lambda kind, info: None
    # the L1 agent of the last round (leka.policy.idle_tuner: MetaSchedule), None for none
    idle_agent: Agent | None = None
    t_mark: float = field(default_factory=time.monotonic)
    wait_mark: float = 0.0  # the evaluator's slot waiting (benchmark/judge/slots.py) counted up to t_mark
    gate_wait_s: float = 0.0  # this process's waits for the CPU gate (cpu_shared): not the run's time
    # candidates by node id, as `propose` made them or as read once from the tree: a child is
    # evaluated, routed and expanded from one object, not parsed from candidate.json each time
    _candidates: OrderedDict[int, ir.Candidate] = field(default_factory=OrderedDict, repr=False)
    # agent contexts built (`context_for`): one per iteration, the route's, which the propose after it reuses
    contexts_built: int = 0
    _routed: tuple[int, int, AgentContext] | None = field(default=None, repr=False)

    @property
    def workdir(self) -> Path:
        return self.run_dir / "work"

    @property
    def layers(self) -> list[str]:
        return [lv for lv in level_names() if lv in self.cfg.run.layers]

    # ---- budget -------------------------------------------------------------------------------
    def tick(self, state: RunState) -> float:
        """Wall clock used so far, across resumes (time before the last checkpoint of a killed run
        is counted; the gap until the resume is not). Time spent waiting for a measuring slot, which
        other jobs of a grid hold, is not counted either."""
        now = time.monotonic()
        waited = getattr(self.evaluator, "wait_s", 0.0) + self.gate_wait_s - self.wait_mark
        used = state.get("budget_used_s", 0.0) + max(0.0, now - self.t_mark - waited)
        self.t_mark, self.wait_mark = now, self.wait_mark + waited
        return used

    def cpu_shared(self, local_work: bool = True) -> Hold:
        """The machine's CPU gate, shared, for this process's work on the cores while other jobs of a grid
        may be timing (measuring slots on); an exclusive taker is let in first, and the wait for it is not
        the run's time. `local_work` False (an LLM agent waiting for its model): nothing is held."""
        h = cpu_gate(self.cfg.backend, False, local_work and self.cfg.evaluator.measure_slots > 0)
        self.gate_wait_s += h.waited_s
        return h

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

    # ---- what evaluations cost (issue 44: a run ends within 5% of its budget) ------------------------
    @staticmethod
    def _cost_of(n) -> tuple[float, float, float] | None:
        """(wall seconds the loop waited for the node's evaluation, of which its timing phase, of which what
        an export repeats: the child's start, prepare and build); None for a node never evaluated. The loop
        records the first as meta["cost_s"] (older trees: the child's own wall)."""
        if n is None or n.result is None or n.status == "proposed":
            return None
        cost = n.meta.get("cost_s", n.meta.get("eval_s"))
        if cost is None:
            return None
        ph = n.result.extra.get("phase_s") or {}
        start = max(0.0, float(cost) - sum(float(v or 0.0) for v in ph.values())) if ph else 0.0
        build = start + float(ph.get("prepare", 0.0) or 0.0) + float(ph.get("build", 0.0) or 0.0)
        return float(cost), float(ph.get("time_step", 0.0) or 0.0), build

    def _costs(self) -> list[tuple[float, float, float]]:
        """`_cost_of` every evaluated node, oldest first."""
        return [c for c in (self._cost_of(n) for n in self.tree.nodes()) if c is not None]

    def eval_fixed_s(self, nid: int | None = None) -> float:
        """What an evaluation costs here besides its timing phase (build, checks, profile, the child's
        start): the median of the last five evaluations' (the root's alone at first, whose cold build
        makes it an overestimate). For node `nid` when it carries no level state (every kernel
        default-scheduled, as the root's: an L0 edit that invalidated every schedule), the latest such
        node's when that is longer: its kernels run as slowly as the root's (issue 44: a ResNet block's L0
        children took 160 s each where the L1 nodes before them took 13 s, and the run ended 27% over)."""
        costs = self._costs()[-5:]
        if not costs:
            return 0.0
        fixed = sorted(max(0.0, c - t) for c, t, _ in costs)
        median = fixed[len(fixed) // 2]
        if nid is None or not self.candidate(nid).bare:
            return median
        # rare (an L0 edit dropped every schedule), so the tree is read again only here
        bare = next((c for c in (self._cost_of(n) for n in reversed(self.tree.nodes())
                                 if n.parent is None or n.meta.get("bare")) if c is not None), None)
        return max(median, bare[0] - bare[1]) if bare is not None else median

    def final_reserve_s(self) -> float:
        """Budget kept for the run's last step, the export of the best node (leka.report.export_best: the
        child's start, prepare and a build of that candidate, whose kernels and L2 objects are cached by
        then, and the export; no check, no profile, no timing), so that the run ends within its budget:
        1.25 x what those steps took in the best node's own evaluation or in the root's cold one, whichever
        is longer, plus half a second to link (the median of the last evaluations' where the best has no
        record). The root's counts because the export links the whole library, which no evaluation does:
        Level-3 exports took 8-12 s where the best node's build took 3.6-6 s and the root's 6.7-10 s
        (issue 44: runs ended 3-4% past their budget)."""
        try:
            best = self._cost_of(self.tree.answer())
        except Exception:  # noqa: BLE001 - a tree without an answer yet: the recent evaluations say it
            best = None
        if best is None:
            recent = sorted(b for _, _, b in self._costs()[-5:])
            if not recent:
                return 0.0
            best = (0.0, 0.0, recent[len(recent) // 2])
        roots = self.tree.roots()
        root = self._cost_of(roots[0]) if roots else None
        return 1.25 * max(best[2], root[2] if root is not None else 0.0) + 0.5

    def over_budget_reserved(self, used_s: float, evals: int) -> str | None:
        """`over_budget` with the final export's reserve counted as spent."""
        return self.over_budget(used_s + self.final_reserve_s(), evals)

    def eval_plan(self, used_s: float, nid: int | None = None) -> tuple[bool, float | None]:
        """(whether to start one more evaluation, of node `nid` where known, and its timing budget). The
        budget left after the export's reserve goes to this evaluation's timing when it is less than
        evaluator.timing_budget_s; an evaluation that would end nearer the budget's end by not starting
        (under half its fixed cost left) is not started, so the run's end falls within half an evaluation
        of its budget either way."""
        left = self.cfg.run.budget_s - used_s - self.final_reserve_s()
        fixed = self.eval_fixed_s(nid)
        if left <= 0 or (fixed > 0 and left < 0.5 * fixed):
            return False, None
        timing = left - fixed
        if timing >= self.cfg.evaluator.timing_budget_s:
            return True, None
        return True, max(0.0, timing)

    @staticmethod
    def propose_cost_s(state: RunState, level: str) -> float:
        """What the level's proposal step (the agent, then applying its edits) took in this run: the median
        of its last three; 0 before its first. A rule L0 agent tries its passes on a Level-3 module for
        half a minute, and a small model's call takes as long: a step that leaves no room for the
        evaluation it exists for is not started (issue 44: runs overran their budget by 9%)."""
        xs = sorted((state.get("propose_s") or {}).get(level, []))
        return xs[len(xs) // 2] if xs else 0.0

    def deadline(self, state: RunState) -> float:
        """Absolute monotonic time at which the wall-clock budget ends (for LLM calls)."""
        return self.t_mark + (self.cfg.run.budget_s - state.get("budget_used_s", 0.0))

    # ---- candidates -----------------------------------------------------------------------------
    def candidate(self, nid: int) -> ir.Candidate:
        got = self._candidates.get(nid)
        if got is None:
            data = self.tree.artifact(nid, "candidate.json")
            if data is None:
                raise KeyError(f"node {nid} has no candidate.json")
            got = ir.Candidate.model_validate_json(data)
        self.keep_candidate(nid, got)
        return got

    def keep_candidate(self, nid: int, cand: ir.Candidate) -> None:
        """Remember a node's candidate (the few latest: a Level-3 candidate's texts are large)."""
        self._candidates[nid] = cand
        self._candidates.move_to_end(nid)
        while len(self._candidates) > CANDIDATES_KEPT:
            self._candidates.popitem(last=False)

    def level_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(level_names(), 0)
        for n in self.tree.nodes():
            if n.level in counts:
                counts[n.level] += 1
        return counts

    def routed_context(self, nid: int, state: RunState) -> AgentContext:
        """The route's context for node `nid`; a copy is kept for the propose that follows (nothing it
        reads changes in between: the tree, the state's budget and exhausted levels), so the router may
        change its own without the agent seeing that."""
        got = self.context_for(nid, "", "", state)
        kept = dataclasses.replace(got, tried=set(got.tried), extra=copy.deepcopy(got.extra))
        self._routed = (nid, state.get("iteration", 0), kept)
        return got

    def propose_context(self, nid: int, level: str, reason: str, state: RunState) -> AgentContext:
        """The context the route built for this node and iteration, with the routed level and reason;
        built anew only where none is kept (a run resumed between its route and its propose)."""
        kept, self._routed = self._routed, None
        if kept is not None and kept[:2] == (nid, state.get("iteration", 0)):
            return dataclasses.replace(kept[2], level=level, route_reason=reason)
        return self.context_for(nid, level, reason, state)

    def context_for(self, nid: int, level: str, reason: str, state: RunState) -> AgentContext:
        self.contexts_built += 1
        node = self.tree.get(nid)
        tried = {edit_digest(n.edit) for n in self.tree.children(nid) if n.edit is not None}
        tried |= {edit_digest(n.edit) for n in self.tree.lineage(nid) if n.edit is not None}
        target = A.make_target(self.cfg.backend)
        extra = {"exclude_levels": state.get("exhausted", {}).get(str(nid), []),
                 # the check this node failed (nan, mismatch, ...), None when it passed: a root that
                 # fails is still expanded, and the router then says which level can repair it
                 "failed": node.result.error_kind if node.result is not None and not node.result.correct else None,
                 "level_counts": self.level_counts(), "evals": state.get("evals", 0)}
        if self.cfg.tuner.enabled:  # only then: a run without the tool sees the very same context
            extra["tuner"] = True
        if state.get("widen"):  # only then: a run that never widens sees the very same context
            extra["widen"] = state["widen"]
        extra["l1_batch"] = self.cfg.run.l1_batch
        extra["near_roof"] = self.cfg.router.near_roof  # kernels this close to their roof are left alone
        return AgentContext(
            task_id=self.task.id, backend=self.cfg.backend, level=level, route_reason=reason,
            profile=node.profile, profile_text=profile_text(node.profile),
            lineage_text=lineage_text(self.tree, nid), tried=tried, seed=self.cfg.run.seed + state.get("iteration", 0),
            variants=self.cfg.run.variants_per_call, vector_lanes=A.vector_lanes_fp32(target),
            num_cores=int(A.target_json(target).get("num-cores", 2) or 2),
            extra=extra, deadline=self.deadline(state),
        )


def profile_text(profile: dict | None) -> str:
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
