"""`leka run`: set up a run folder, build the agents, drive the graph with a live view, and write the
results (tree.sqlite, config.yaml, report.md, summary.json, the best candidate as a deployable .so)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from rich.console import Console
from rich.live import Live
from rich.table import Table

from leka.core.config import LekaConfig, dump_config, load_config
from leka.core.types import LEVELS, UserError

if TYPE_CHECKING:  # the loop is imported when a run starts, not for `leka --help`
    from leka.loop.context import Focus

console = Console()


def parse_duration(text: str | float) -> float:
    """'10m', '90s', '1h30m', '2.5m' or plain seconds."""
    if isinstance(text, (int, float)):
        secs = float(text)
    else:
        s = str(text).strip().lower()
        if re.fullmatch(r"\d+(\.\d+)?", s):
            secs = float(s)
        else:
            parts = re.findall(r"(\d+(?:\.\d+)?)\s*([hms])", s)
            if not parts or "".join(f"{a}{b}" for a, b in parts) != s.replace(" ", ""):
                raise UserError(f"budget {text!r}: expected a duration like 90s, 10m, 1h30m")
            secs = sum(float(a) * {"h": 3600, "m": 60, "s": 1}[u] for a, u in parts)
    if secs <= 0:
        raise UserError(f"budget {text!r}: must be more than zero")
    return secs


def _check_out(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".leka-write-probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UserError(f"--out {out}: not writable ({e.strerror or e})") from e


def new_run_dir(out: Path, task_id: str, seed: int) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    d = out / f"{task_id}-{stamp}-s{seed}"
    n = 1
    while d.exists():
        n += 1
        d = out / f"{task_id}-{stamp}-s{seed}-{n}"
    d.mkdir(parents=True)
    return d


# --------------------------------------------------------------------------------------- agents
def make_agents(cfg: LekaConfig, focus: Focus, root, task, run_dir: Path):
    """(agents by level, router, ledger) for the configured policy. The LLM agents' callbacks read
    `focus`, which the loop keeps on the candidate being expanded and the budget's deadline."""
    from leka.loop.routers import make_router

    if cfg.run.policy == "rules":
        from agents.rules import make_rule_agents

        return make_rule_agents(cfg.backend, root_params=root.params), make_router(cfg), None
    from agents.llm_agent import LLMAgent
    from leka.llm.base import Ledger
    from leka.llm.factory import make_provider

    if not cfg.llm.model:
        raise UserError("--policy llm needs --model openai:MODEL | anthropic:MODEL | compat:URL|MODEL")
    ledger = Ledger.from_config(cfg.run)
    provider = make_provider(cfg.llm.model, cfg.llm, ledger, record_to=run_dir / "llm_transcript.jsonl")
    views = llm_views(root, task)

    def check(edit) -> str | None:
        from leka.ir.edits import apply_edit

        out = apply_edit(focus.candidate, edit, workdir=run_dir / "work", root_params=root.params)
        return out.error

    def deadline():
        return focus.deadline

    reports = run_dir / "llm_reports.jsonl"  # one line per agent call: replies parsed, edits legal

    def on_report(rep) -> None:
        with reports.open("a") as f:
            f.write(rep.model_dump_json() + "\n")

    agents = {lv: LLMAgent(lv, provider, views=views, check=check, max_repairs=cfg.llm.max_repairs,
                           deadline=deadline, max_tokens=cfg.llm.max_tokens, temperature=cfg.llm.temperature,
                           context_tokens=cfg.llm.context_tokens, prompt_tokens=cfg.llm.prompt_tokens,
                           small_schema=cfg.llm.small_schema,
                           on_report=on_report)
              for lv in LEVELS}
    router = make_router(cfg, provider, views, deadline)
    if hasattr(router, "on_report"):
        router.on_report = on_report
    return agents, router, ledger


def with_tuner(cfg: LekaConfig, agents: dict, focus: Focus, root, run_dir: Path) -> dict:
    """With `tuner.enabled`, the L1 agent gets MetaSchedule as a tool (agents/l1_tune.py); its calls
    run inside the L1 node, so the loop's wall clock charges them to the budget."""
    if not cfg.tuner.enabled or "L1" not in agents or "L1" not in cfg.run.layers:
        return agents
    from agents.l1_tune import TunerL1Agent

    t = cfg.tuner
    wrapped = TunerL1Agent(agents["L1"], cfg.backend, root_params=root.params, trials=t.trials,
                           cache_dir=cfg.baseline.cache_dir, work_dir=run_dir / "work",
                           deadline=lambda: focus.deadline, max_share=t.max_share, min_left_s=t.min_left_s,
                           min_share=t.min_share, run_name=run_dir.name)
    return {**agents, "L1": wrapped}


def tuner_summary(run_dir: Path) -> dict[str, Any]:
    """What the MetaSchedule tool did in a run: calls, trials and seconds (all charged to the budget)."""
    calls = [json.loads(p.read_text()) for p in sorted((run_dir / "work" / "ms-l1").glob("*/tuning.json"))]
    return {"calls": len(calls), "ok": sum(1 for c in calls if c.get("ok")),
            "trials": sum(int(c.get("trials") or 0) for c in calls),
            "seconds": round(sum(float(c.get("seconds") or 0.0) for c in calls), 1), "kernels": calls}


def llm_views(root, task):
    from leka.ir import views as V

    def views(cand, actx) -> dict[str, str]:
        out = {"relax": V.relax_view(cand), "task_contract": task.path.read_text()[:6000]}
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


def _hottest_name(profile: dict | None, rows: list[dict]) -> str | None:
    names = {r["name"] for r in rows}
    for k in (profile or {}).get("kernels", []):
        if k.get("name") in names:
            return k["name"]
    return rows[0]["name"] if rows else None


# --------------------------------------------------------------------------------------- live view
class LiveView:
    """Current node, best speedup, budget left, nodes per level; a log line per evaluation."""

    def __init__(self, cfg: LekaConfig, task_id: str, quiet: bool = False):
        self.cfg, self.task_id, self.quiet = cfg, task_id, quiet
        self.best = 0.0
        self.best_node: int | None = None
        self.current: int | None = None
        self.by_level = {"root": 0, **dict.fromkeys(LEVELS, 0)}
        self.failed = 0
        self.used = 0.0
        self.last = ""
        self.live: Live | None = None

    def table(self) -> Table:
        t = Table(title=f"LEKA {self.task_id} [{self.cfg.backend}, {self.cfg.run.policy}, {self.cfg.run.routing}]")
        for col in ("current", "best speedup", "budget left", *LEVELS, "failed", "last"):
            t.add_column(col)
        left = max(0.0, self.cfg.run.budget_s - self.used)
        t.add_row(str(self.current), f"{self.best:.2f}x (#{self.best_node})", f"{left:.0f}s",
                  *(str(self.by_level[lv]) for lv in LEVELS), str(self.failed), self.last[:60])
        return t

    def event(self, kind: str, info: dict[str, Any]) -> None:
        if kind == "sense":
            self.current = info["node"]
            self.used = info["budget_used_s"]
        elif kind == "route":
            self.last = f"#{info['node']} -> {info['level']}: {info['reason']}"
        elif kind in ("evaluated", "illegal"):
            lv = info.get("level") or "root"
            self.by_level[lv] += 1
            res = info.get("result")
            if kind == "illegal" or (res is not None and not res.correct):
                self.failed += 1
            if res is not None and res.correct and res.timing_valid and (res.speedup or 0) > self.best:
                self.best, self.best_node = res.speedup, info["node"]
            if not self.quiet and self.live is None:
                sp = f"{res.speedup:.2f}x" if res is not None and res.speedup else "-"
                if kind == "illegal":
                    st = f"illegal edit: {(info.get('error') or '').splitlines()[0][:100] if info.get('error') else ''}"
                else:
                    st = info.get("status") or (res.error_kind if res is not None and res.error_kind else "ok")
                console.print(f"  node {info['node']:>4} {lv:>4} {sp:>8} {st}")
        if self.live is not None:
            self.live.update(self.table())


# --------------------------------------------------------------------------------------- results
def write_results(run_dir: Path, cfg: LekaConfig, task, tree, final: dict[str, Any], evaluator, ledger,
                  export: bool = True) -> dict[str, Any]:
    from leka.loop.context import edit_summary

    nodes = tree.nodes()
    by_level = {lv: sum(1 for n in nodes if n.level == lv) for lv in LEVELS}
    best_node = tree.answer()  # never a validly timed slowdown when the root is correct
    summary: dict[str, Any] = {
        "task": task.id, "backend": cfg.backend, "run_dir": str(run_dir),
        "best_node": best_node.id if best_node else None,
        "best_speedup": best_node.result.speedup if best_node else None,
        # its confidence interval (benchmark/stats.py); "faster" = the lower bound above 1
        "best_speedup_lo": best_node.result.speedup_lo if best_node and best_node.result else None,
        "best_speedup_hi": best_node.result.speedup_hi if best_node and best_node.result else None,
        "best_faster": bool(best_node and best_node.result and best_node.result.is_faster(1.0)),
        "best_loaded": bool(best_node and best_node.result and best_node.result.loaded),
        # timings during which other processes used the machine (extra["machine_load"], benchmark/load.py)
        "timed_evaluations": sum(1 for n in nodes if n.result is not None and n.result.speedup is not None),
        "loaded_evaluations": sum(1 for n in nodes if n.result is not None and n.result.loaded),
        "ci_level": cfg.evaluator.ci_level,
        "baseline": baseline_label(cfg.baseline.kind, cfg.baseline.trials),
        "best_correct": bool(best_node and best_node.result.correct),
        "best_timing_valid": bool(best_node and best_node.result.timing_valid),
        "nodes_by_level": by_level, "nodes_total": len(nodes),
        "nodes_by_status": {str(s.value if hasattr(s, "value") else s): sum(1 for n in nodes if n.status == s)
                            for s in sorted({n.status for n in nodes})},
        "budget_used_s": round(float(final.get("budget_used_s", 0.0)), 2), "budget_s": cfg.run.budget_s,
        "evaluations": final.get("evals", 0), "stop_reason": final.get("stop_reason", ""),
        "policy": cfg.run.policy, "routing": cfg.run.routing, "layers": cfg.run.layers, "seed": cfg.run.seed,
        "route_reasons": [n.route_reason for n in nodes if n.route_reason][:50],
    }
    if cfg.baseline.kind == "untuned":  # the old key, kept only where its name is true
        summary["best_speedup_vs_untuned"] = summary["best_speedup"]
    if cfg.tuner.enabled:
        summary["tuner"] = tuner_summary(run_dir)
    if ledger is not None:
        summary["llm"] = {**ledger.to_dict(records=False), "by_agent": llm_by_tag(ledger)}
        summary["llm_nodes"] = {lv: sum(1 for n in nodes if n.level == lv and n.meta.get("llm_usage")) for lv in LEVELS}
    if export and best_node is not None:
        from leka import ir

        cand = ir.Candidate.model_validate_json(tree.artifact(best_node.id, "candidate.json"))
        so = run_dir / "best.so"
        res = evaluator.evaluate(task, cand, time_it=False, export=str(so))
        if res.correct and so.exists():
            summary["export"] = {"so": "best.so", "loader": "load_best.py"}
            (run_dir / "load_best.py").write_text(LOADER.format(task=task.id))
        else:
            summary["export"] = {"error": res.error or "export failed"}
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    (run_dir / "report.md").write_text(render_report(summary, tree, best_node, edit_summary, ledger))
    try:
        tree.export_html(run_dir / "tree.html")
    except Exception as e:  # noqa: BLE001 - the view is a convenience, never worth failing the run
        console.print(f"[yellow]tree.html not written: {e}[/]")
    return summary


def baseline_label(kind: str, trials: int) -> str:
    """What a speedup is measured against, in words (summary.json, report.md, the live view)."""
    return {"untuned": "untuned TVM", "tuned": f"MetaSchedule-tuned TVM ({trials} trials)",
            "torch": "PyTorch eager", "ort": "ONNX Runtime"}.get(kind, kind)


def prepare_baseline(cfg: LekaConfig, task, quiet: bool = False) -> None:
    """A tuned baseline is tuned (once, cached in cfg.baseline.cache_dir) before the run starts, so no
    evaluation of the run fails for want of a MetaSchedule database."""
    if cfg.baseline.kind != "tuned":
        return
    from benchmark import baselines

    if baselines.is_tuned(baselines.ms_dir(task, cfg.backend, cfg.baseline.trials, cfg.baseline.cache_dir,
                                           cfg.device)):
        return
    with console.status(f"tuning the MetaSchedule baseline of {task.id} ({cfg.baseline.trials} trials, "
                        "cached for later runs) ...", spinner="dots") if not quiet else _nullctx():
        baselines.ensure_tuned(task, cfg.backend, cfg.baseline.trials, cfg.baseline.cache_dir, device=cfg.device)


def _nullctx():
    import contextlib

    return contextlib.nullcontext()


LOADER = '''"""Load the best candidate LEKA found for {task} (a Relax VM executable) and run it."""
import sys

import numpy as np
import tvm
from tvm import relax

lib = tvm.runtime.load_module(sys.argv[1] if len(sys.argv) > 1 else "best.so")
vm = relax.VirtualMachine(lib, tvm.cpu())
# inputs: the task's get_inputs() as numpy arrays, in order (weights are baked into the module)
# out = vm["main"](*[tvm.runtime.tensor(a) for a in inputs])
print("loaded; call vm['main'](*inputs)", vm)
'''


def llm_by_tag(ledger) -> dict[str, dict[str, Any]]:
    """Calls, tokens and cost per agent (the ledger's tag: L0, L1, L2, router)."""
    out: dict[str, dict[str, Any]] = {}
    for r in ledger.records:
        t = out.setdefault(r.tag or "untagged", {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0})
        t["calls"] += 1
        t["input_tokens"] += r.input_tokens
        t["output_tokens"] += r.output_tokens
        t["cost_usd"] = round(t["cost_usd"] + r.cost_usd, 6)
    return out


def render_report(summary: dict[str, Any], tree, best_node, edit_summary, ledger) -> str:
    from benchmark.stats import fmt_interval

    lines = [f"# LEKA run: {summary['task']} ({summary['backend']})", ""]
    sp = summary["best_speedup"]
    ci = fmt_interval(sp, summary.get("best_speedup_lo"), summary.get("best_speedup_hi")) if sp else "n/a"
    lines += [f"- best node: #{summary['best_node']}, speedup vs {summary['baseline']}: {ci} "
              f"({round(100 * summary.get('ci_level', 0.95))}% interval; faster, its lower bound above 1: "
              f"{summary.get('best_faster', False)}), correct: {summary['best_correct']}"
              + (" - timed on a loaded machine" if summary.get("best_loaded") else ""),
              f"- loaded machine: {summary.get('loaded_evaluations', 0)} of {summary.get('timed_evaluations', 0)} "
              "timed evaluations ran while other processes used the CPU (their intervals carry that noise)",
              f"- nodes: {summary['nodes_total']} ({', '.join(f'{k} {v}' for k, v in summary['nodes_by_level'].items())}); "
              f"statuses: {summary['nodes_by_status']}",
              f"- budget used: {summary['budget_used_s']:.0f} s of {summary['budget_s']:.0f} s; "
              f"evaluations: {summary['evaluations']}; stopped: {summary['stop_reason'] or 'finished'}",
              f"- policy `{summary['policy']}`, routing `{summary['routing']}`, layers {summary['layers']}, "
              f"seed {summary['seed']}", ""]
    if best_node is not None:
        lines += ["## Lineage of the best candidate", "",
                  "| step | node | level | route reason | edit | speedup | effect vs parent |",
                  "|---|---|---|---|---|---|---|"]
        prev = None
        for i, n in enumerate(tree.lineage(best_node.id)):
            s = n.result.speedup if n.result else None
            eff = f"{s / prev:.2f}x" if (s and prev) else "-"
            sci = fmt_interval(s, n.result.speedup_lo, n.result.speedup_hi) if (s and n.result) else "-"
            lines.append(f"| {i} | #{n.id} | {n.level or 'root'} | {(n.route_reason or '-').replace('|', '/')[:140]} "
                         f"| {edit_summary(n.edit).replace('|', '/')} | {sci} | {eff} |")
            prev = s or prev
            if n.edit is not None and n.edit.rationale:
                lines.append(f"|  |  |  | rationale: {n.edit.rationale[:160].replace('|', '/')} |  |  |  |")
        lines.append("")
    if ledger is not None:
        d = ledger.to_dict(records=False)
        lines += ["## LLM accounting", "",
                  f"- calls: {d['calls']} ({d['failed_calls']} failed, {d['attempts']} attempts), input tokens: "
                  f"{d['input_tokens']}, output tokens: {d['output_tokens']}, cost: ${d['cost_usd']:.4f}"
                  + (f" ({d['unpriced_calls']} calls of unpriced models count $0)" if d["unpriced_calls"] else ""),
                  "", "| agent | calls | input tokens | output tokens | cost |", "|---|---|---|---|---|"]
        for tag, t in llm_by_tag(ledger).items():
            lines.append(f"| {tag} | {t['calls']} | {t['input_tokens']} | {t['output_tokens']} | ${t['cost_usd']:.4f} |")
        lines.append("")
    failed = [n for n in tree.nodes() if n.status == "failed"][:10]
    if failed:
        lines += ["## Failed attempts (first 10)", ""]
        for n in failed:
            err = (n.result.error or "").splitlines()[0][:200] if n.result else ""
            lines.append(f"- #{n.id} {n.level} {edit_summary(n.edit)}: {n.result.error_kind if n.result else ''}: {err}")
        lines.append("")
    lines += ["Files: `tree.sqlite` (every node), `tree.html` (interactive view), `config.yaml`, `summary.json`, "
              "`best.so` + `load_best.py`.", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------- entry
def run(task_ref: str | None, *, config_files: list[str] = (), overrides: list[str] = (), resume: str | None = None,
        quiet: bool = False, live: bool | None = None, agents_factory=None) -> dict[str, Any]:
    """`agents_factory(cfg, focus, root, task, run_dir) -> (agents, router, ledger)` replaces the
    policy's agents (the experiment runner's `flat` arm); default `make_agents`."""
    from benchmark.evaluator import Evaluator
    from benchmark.roots import load_root
    from benchmark.task import resolve
    from candidate_tree import Tree
    from leka.backends import require_runnable
    from leka.loop.context import Focus, RunContext
    from leka.loop.graph import run_graph

    if resume:
        run_dir = Path(resume)
        if not (run_dir / "config.yaml").is_file() or not (run_dir / "run.json").is_file():
            raise UserError(f"--resume {resume}: not a LEKA run folder (no config.yaml / run.json)")
        cfg = LekaConfig.model_validate(yaml.safe_load((run_dir / "config.yaml").read_text()))
        task = resolve(json.loads((run_dir / "run.json").read_text())["task_path"])
    else:
        cfg = load_config(list(config_files), list(overrides))
        if task_ref is None:
            raise UserError("give --task ID|PATH (or --resume RUN_DIR)")
        require_runnable(cfg.backend, cfg.device.url)
        bad = [lv for lv in cfg.run.layers if lv not in LEVELS]
        if bad or not cfg.run.layers:
            raise UserError(f"--layers: unknown level(s) {bad}; use a comma list of L0, L1, L2")
        if cfg.run.budget_s <= 0:
            raise UserError("budget must be more than zero")
        from agents.hw_sensing import HardwareSensingAgent

        try:
            HardwareSensingAgent(cfg.run.routing, cfg.run.layers, cfg.run.seed)
        except ValueError as e:
            raise UserError(f"--routing: {e}") from e
        task = resolve(task_ref)
        prepare_baseline(cfg, task, quiet)
        if cfg.run.policy == "llm":  # a bad model spec or a missing key: say so before making a run folder
            if not cfg.llm.model:
                raise UserError("--policy llm needs --model openai:MODEL | anthropic:MODEL | compat:URL|MODEL")
            from leka.llm.factory import make_provider

            make_provider(cfg.llm.model, cfg.llm)
        out = Path(cfg.run.out)
        _check_out(out)
        run_dir = new_run_dir(out, task.id, cfg.run.seed)
        dump_config(cfg, run_dir / "config.yaml")
        (run_dir / "run.json").write_text(json.dumps({"task": task.id, "task_path": str(task.path),
                                                      "started": time.time()}))
    root = load_root(task, cfg.baseline.cache_dir)
    evaluator = Evaluator(cfg.evaluator, cfg.backend, cfg.baseline, device=cfg.device)
    focus = Focus()
    agents, router, ledger = (agents_factory or make_agents)(cfg, focus, root, task, run_dir)
    agents = with_tuner(cfg, agents, focus, root, run_dir)
    tree = Tree(run_dir, defer=cfg.run.defer_followups)
    view = LiveView(cfg, task.id, quiet=quiet)
    ctx = RunContext(cfg=cfg, task=task, run_dir=run_dir, tree=tree, evaluator=evaluator, agents=agents,
                     router=router, root=root, ledger=ledger, on_event=view.event, focus=focus)
    if not quiet:
        console.print(f"[bold]LEKA[/] {'resuming' if resume else 'run'} {task.id} -> {run_dir}")
    use_live = console.is_terminal if live is None else live
    try:
        if use_live and not quiet:
            with Live(view.table(), console=console, refresh_per_second=4) as lv:
                view.live = lv
                final = run_graph(ctx, resume=bool(resume))
            view.live = None
        else:
            final = run_graph(ctx, resume=bool(resume))
        summary = write_results(run_dir, cfg, task, tree, final, evaluator, ledger)
    finally:
        tree.close()
    if not quiet:
        console.print(summary_table(summary))
    return summary


def summary_table(s: dict[str, Any]) -> Table:
    t = Table(title=f"LEKA summary: {s['task']} ({s['backend']})")
    t.add_column("metric")
    t.add_column("value")
    from benchmark.stats import fmt_interval

    sp = s.get("best_speedup")
    rows = [("best node", s.get("best_node")),
            (f"best speedup vs {s.get('baseline')}",
             fmt_interval(sp, s.get("best_speedup_lo"), s.get("best_speedup_hi")) if sp else "n/a"),
            ("loaded evaluations", f"{s.get('loaded_evaluations', 0)} of {s.get('timed_evaluations', 0)}"),
            ("best correct", s.get("best_correct")), ("nodes by level", s.get("nodes_by_level")),
            ("evaluations", s.get("evaluations")), ("budget used", f"{s.get('budget_used_s', 0):.0f} s"),
            ("stopped", s.get("stop_reason") or "finished"), ("run folder", s.get("run_dir")),
            ("export", (s.get("export") or {}).get("so", (s.get("export") or {}).get("error")))]
    for k, v in rows:
        t.add_row(k, str(v))
    return t
