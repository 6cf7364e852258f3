"""The agents of a run's policy (`run.policy`: rules or llm), its router, and MetaSchedule as the L1
agent's tool. The LLM agents get what they need as arguments: `check(candidate, edit)` applies an edit
to the candidate the loop hands them, and their calls stop at the AgentContext's deadline."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from leka.core.config import LekaConfig
from leka.core.levels import BUILTIN_LEVELS, LEVEL_SPECS, level_names
from leka.core.types import Edit, UserError

if TYPE_CHECKING:
    from leka import ir
    from leka.core.protocols import Agent, Router
    from leka.core.task import Task
    from leka.llm.base import Ledger

Agents = tuple["dict[str, Agent]", "Router", "Ledger | None"]


def make_agents(cfg: LekaConfig, root: ir.Root, task: Task, run_dir: Path) -> Agents:
    """(agents by level, router, ledger) for the configured policy."""
    from leka.loop.routers import make_router

    if cfg.run.policy == "rules":
        from agents.rules import make_rule_agents

        return make_rule_agents(cfg.backend, root_params=root.params), make_router(cfg), None
    from agents.llm_agent import LLMAgent

    m = llm_parts(cfg, root, task, run_dir)
    agents = {lv: LLMAgent(lv, m.provider, views=m.views, check=m.check, **m.agent_kwargs(cfg))
              for lv in level_names()}
    return agents, make_router(cfg, m.provider, m.views, on_report=m.on_report), m.ledger


@dataclass
class LLMParts:
    """What every model-backed agent of a run shares: one provider (one ledger, one transcript), the
    legality check, the views, and one report sink (RUN_DIR/llm_reports.jsonl, one line per call of
    any agent or the router: leka.core.protocols.Reports). The flat arm (leka.exp.flat) builds its one
    agent from the same parts, so it has the same model, facts, repair loop and budget."""

    provider: Any
    ledger: Ledger
    views: Callable[[Any, Any], dict[str, str]]
    check: Callable[[ir.Candidate, Edit], str | None]
    on_report: Callable[[Any], None]
    root: ir.Root
    task: Task

    def agent_kwargs(self, cfg: LekaConfig) -> dict[str, Any]:
        """The repair loop's settings, the same for every agent of the run."""
        return {"max_repairs": cfg.llm.max_repairs, "max_tokens": cfg.llm.max_tokens,
                "temperature": cfg.llm.temperature, "context_tokens": cfg.llm.context_tokens,
                "prompt_tokens": cfg.llm.prompt_tokens, "small_schema": cfg.llm.small_schema,
                "on_report": self.on_report}


def llm_parts(cfg: LekaConfig, root: ir.Root, task: Task, run_dir: Path) -> LLMParts:
    from leka.llm.base import Ledger
    from leka.llm.factory import make_provider

    if not cfg.llm.model:
        raise UserError("--policy llm needs --model openai:MODEL | anthropic:MODEL | compat:URL|MODEL")
    ledger = Ledger.from_config(cfg.run)
    provider = make_provider(cfg.llm.model, cfg.llm, ledger, record_to=run_dir / "llm_transcript.jsonl")
    reports = run_dir / "llm_reports.jsonl"  # one line per agent call: replies parsed, edits legal

    def on_report(rep) -> None:
        with reports.open("a") as f:
            f.write(rep.model_dump_json() + "\n")

    return LLMParts(provider=provider, ledger=ledger, views=llm_views(root, task),
                    check=check_edit(run_dir / "work", root), on_report=on_report, root=root, task=task)


def check_edit(workdir: Path, root: ir.Root) -> Callable[[ir.Candidate, Edit], str | None]:
    """The LLM agents' legality check: the edit applied (and built) on the candidate being expanded;
    None when it is legal, else the reason. apply_edit memoises the outcome, so the loop's own apply
    of a legal edit (leka.loop.nodes._apply) does not repeat the work."""

    def check(candidate: ir.Candidate, edit: Edit) -> str | None:
        from leka.ir.edits import apply_edit

        return apply_edit(candidate, edit, workdir=workdir, root_params=root.params).error

    return check


def with_tuner(cfg: LekaConfig, agents: dict[str, Agent], root: ir.Root, run_dir: Path) -> dict[str, Agent]:
    """With `tuner.enabled`, the L1 agent gets MetaSchedule as a tool (agents/l1_tune.py); its calls
    run inside the L1 node, so the loop's wall clock charges them to the budget."""
    if not cfg.tuner.enabled or "L1" not in agents or "L1" not in cfg.run.layers:
        return agents
    return {**agents, "L1": _tuner(cfg, agents["L1"], root, run_dir)}


def _tuner(cfg: LekaConfig, inner: Agent, root: ir.Root, run_dir: Path) -> Agent:
    """MetaSchedule as an L1 agent around `inner`, set up from the `tuner` section."""
    from agents.l1_tune import TunerL1Agent

    t = cfg.tuner
    return TunerL1Agent(inner, cfg.backend, root_params=root.params, trials=t.trials,
                        cache_dir=cfg.baseline.cache_dir, work_dir=run_dir / "work", max_share=t.max_share,
                        min_left_s=t.min_left_s, min_share=t.min_share, run_name=run_dir.name)


class _NothingMore:
    """The inner agent of the idle tuner: the policy's own L1 agent had nothing more to propose."""

    level = "L1"

    def propose(self, candidate, context) -> list:
        return []


def idle_tuner(cfg: LekaConfig, root: ir.Root, run_dir: Path) -> Agent | None:
    """The L1 agent of the run's last round (`tuner.when_idle`): MetaSchedule alone, for a run whose
    agents have nothing more to propose anywhere while budget is left. None where the L1 agent already
    has the tool (`tuner.enabled`) or the L1 layer is off, and under a model's policy: MetaSchedule builds
    and runs the kernels it tunes in this process's children, outside the judge's sandbox, and a model's
    graph edits may carry PrimFuncs of its own."""
    if cfg.tuner.enabled or not cfg.tuner.when_idle or "L1" not in cfg.run.layers or cfg.run.policy != "rules":
        return None
    return _tuner(cfg, _NothingMore(), root, run_dir)


def llm_views(root: ir.Root, task: Task) -> Callable[[Any, Any], dict[str, str]]:
    from leka.ir import views as V

    def views(cand, actx) -> dict[str, str]:
        out = {"relax": V.relax_view(cand), "task_contract": task.path.read_text()[:6000]}
        spec = LEVEL_SPECS.get(actx.level)  # (the router and the any-level agents are no level)
        if spec is not None and spec.state and spec.name not in BUILTIN_LEVELS:
            out["state"] = V.state_view(cand, actx.level)  # a registered level's own decisions
        try:
            rows = V.kernel_table(cand, root_params=root.params)
            out["summary"] = V.kernel_table_text(cand, root_params=root.params)
            hot = _hottest_name(actx.profile, rows)
            if hot:
                out["tir"] = V.tir_view(cand, hot, root_params=root.params, scheduled=False)
                out["tir_note"] = f"(hottest kernel: {hot})"
                out["kernel"] = hot
                if actx.level == "L2":
                    out["source"] = V.source_view(cand, hot, root_params=root.params)
        except Exception as e:  # noqa: BLE001 - a view that cannot be made is said, not fatal
            out["summary"] = f"[kernel views unavailable: {type(e).__name__}: {e}]"
        return out

    return views


def flat_views(root: ir.Root, task: Task, hot: int = 3) -> Callable[[Any, Any], dict[str, str]]:
    """What the flat arm's one agent sees (leka.exp.flat): the whole candidate at once, i.e. the Relax
    text, the PrimFunc table, and the `hot` hottest kernels' TIR and generated sources (the profile
    reaches it as every agent's, in the AgentContext)."""
    from leka.ir import views as V

    def views(cand, actx) -> dict[str, str]:
        out = {"relax": V.relax_view(cand), "task_contract": task.path.read_text()[:6000]}
        try:
            rows = V.kernel_table(cand, root_params=root.params)
            out["summary"] = V.kernel_table_text(cand, root_params=root.params)
            out["kernels"] = " ".join(r["name"] for r in rows)
            names = _hottest_names(actx.profile, rows, hot)
            out["tir"] = "\n\n".join(V.tir_view(cand, n, root_params=root.params, scheduled=False) for n in names)
            out["tir_note"] = f"(hottest first: {', '.join(names)})"
            out["source"] = "\n\n".join(f"// ---- {n}\n{V.source_view(cand, n, root_params=root.params)}"
                                         for n in names)
        except Exception as e:  # noqa: BLE001 - a view that cannot be made is said, not fatal
            out["summary"] = f"[kernel views unavailable: {type(e).__name__}: {e}]"
        return out

    return views


def _hottest_name(profile: dict | None, rows: list[dict]) -> str | None:
    names = _hottest_names(profile, rows, 1)
    return names[0] if names else None


def _hottest_names(profile: dict | None, rows: list[dict], n: int) -> list[str]:
    """The profile's hottest kernels that the table has, then the table's order, `n` at most."""
    names = [r["name"] for r in rows]
    hot = [k["name"] for k in (profile or {}).get("kernels", []) if k.get("name") in names]
    return list(dict.fromkeys([*hot, *names]))[:n]
