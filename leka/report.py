"""The results of `leka run`: summary.json, report.md, tree.html, the best candidate as a deployable
.so, and the summary table printed at the end."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from leka.core.config import LekaConfig
from leka.core.levels import level_names
from leka.live import console

if TYPE_CHECKING:
    from candidate_tree import Tree
    from leka.core.task import Task


def write_results(run_dir: Path, cfg: LekaConfig, task: Task, tree: Tree, final: dict[str, Any], evaluator,
                  ledger, export: bool = True) -> dict[str, Any]:
    """summary.json, report.md, tree.html and (with `export`) best.so + load_best.py; returns the summary."""
    from leka.loop.context import edit_summary

    best_node = tree.answer()  # never a validly timed slowdown when the root is correct
    summary = run_summary(run_dir, cfg, task, tree, final, ledger, best_node)
    if export and best_node is not None:
        t0 = time.monotonic()
        summary["export"] = export_best(run_dir, task, tree, best_node, evaluator)
        # the export is the run's last step, inside its budget (the loop kept a reserve for it: issue 44)
        summary["final_eval_s"] = round(time.monotonic() - t0, 2)
        summary["budget_used_s"] = round(summary["budget_used_s"] + summary["final_eval_s"], 2)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    (run_dir / "report.md").write_text(render_report(summary, tree, best_node, edit_summary, ledger))
    try:
        tree.export_html(run_dir / "tree.html")
    except Exception as e:  # noqa: BLE001 - the view is a convenience, never worth failing the run
        console.print(f"[yellow]tree.html not written: {e}[/]")
    return summary


def run_summary(run_dir: Path, cfg: LekaConfig, task: Task, tree: Tree, final: dict[str, Any], ledger,
                best_node) -> dict[str, Any]:
    """What summary.json says of a finished run (the experiment runner and the report read it)."""
    nodes = tree.nodes()
    by_level = {lv: sum(1 for n in nodes if n.level == lv) for lv in level_names()}
    summary: dict[str, Any] = {
        "task": task.id, "backend": cfg.backend, "run_dir": str(run_dir),
        "best_node": best_node.id if best_node else None,
        "best_speedup": best_node.result.speedup if best_node else None,
        # its confidence interval (benchmark/judge/stats.py); "faster" = the lower bound above 1
        "best_speedup_lo": best_node.result.speedup_lo if best_node and best_node.result else None,
        "best_speedup_hi": best_node.result.speedup_hi if best_node and best_node.result else None,
        "best_faster": bool(best_node and best_node.result and best_node.result.is_faster(1.0)),
        "best_loaded": bool(best_node and best_node.result and best_node.result.loaded),
        # timings during which other processes used the machine (extra["machine_load"], benchmark/judge/load.py)
        "timed_evaluations": sum(1 for n in nodes if n.result is not None and n.result.speedup is not None),
        "loaded_evaluations": sum(1 for n in nodes if n.result is not None and n.result.loaded),
        "ci_level": cfg.evaluator.ci_level,
        "baseline": baseline_label(cfg.baseline.kind, cfg.baseline.trials, cfg.backend),
        "best_correct": bool(best_node and best_node.result.correct),
        "best_timing_valid": bool(best_node and best_node.result.timing_valid),
        # an emulated board (qemu): checks count, times are the emulator's (docs/boards.md)
        "emulated": bool(cfg.device.emulated),
        "nodes_by_level": by_level, "nodes_total": len(nodes),
        "nodes_by_status": {str(s.value if hasattr(s, "value") else s): sum(1 for n in nodes if n.status == s)
                            for s in sorted({n.status for n in nodes})},
        "budget_used_s": round(float(final.get("budget_used_s", 0.0)), 2), "budget_s": cfg.run.budget_s,
        "evaluations": final.get("evals", 0), "stop_reason": final.get("stop_reason", ""),
        "policy": cfg.run.policy, "routing": cfg.run.routing, "layers": cfg.run.layers, "seed": cfg.run.seed,
        "route_reasons": [n.route_reason for n in nodes if n.route_reason][:50],
        # the failure taxonomy of the failed evaluations (leka.core.failures), classified here too for a
        # tree whose results were stored before the field existed
        "failures_by_class": failures_by_class(nodes),
    }
    # the task's work as its root counts it, so a rewrite that adds operations raises no roof (profilers/roof.py)
    from profilers.roof import work_flops

    root = min(nodes, key=lambda n: n.id, default=None)
    summary["root_flops"] = work_flops(root.profile) if root is not None else None
    summary.update(roof_summary(best_node, task_flops=summary["root_flops"]))
    summary["kernel_budget"] = kernel_budget(nodes, cfg.router.near_roof)
    summary.update(audit_summary(nodes, best_node))
    # the run's noise floor: its root (the baseline's own program) also timed the baseline against itself
    root = next((n for n in nodes if n.parent is None and n.result is not None), None)
    summary["noise_floor"] = root.result.extra.get("noise_floor") if root is not None else None
    if cfg.baseline.kind == "untuned":  # the old key, kept only where its name is true
        summary["best_speedup_vs_untuned"] = summary["best_speedup"]
    if cfg.tuner.enabled or (run_dir / "work" / "ms-l1").is_dir():  # the tool, or the idle round's tuner
        summary["tuner"] = tuner_summary(run_dir)
    if ledger is not None:
        summary["llm"] = {**ledger.to_dict(records=False), "by_agent": llm_by_tag(ledger)}
        summary["llm_nodes"] = {lv: sum(1 for n in nodes if n.level == lv and n.meta.get("llm_usage")) for lv in level_names()}
    return summary


def failures_by_class(nodes) -> dict[str, int]:
    from leka.core.failures import FAILURE_CLASSES, classify

    got = [r.failure_class or classify(r.error_kind, r.error, r.correct) for n in nodes
           if (r := n.result) is not None and not r.correct]
    return {c: got.count(c) for c in FAILURE_CLASSES if got.count(c)}


def roof_summary(node, task_flops: float | None = None) -> dict[str, Any]:
    """The node's place under the measured roof (profilers/roof.py): its SOL time from its profile,
    the fraction of the roof its judged time reaches, and the SOL score against the run's baseline
    (1 at the roof, 0.5 at the baseline). {} without a timed result and a profile with roofs.
    `task_flops`: the root's FLOPs (`profilers.roof.task_roof`)."""
    from profilers.roof import task_roof

    r = getattr(node, "result", None)
    if node is None or r is None or not node.profile or not r.t_candidate_s:
        return {}
    tr = task_roof(node.profile, measured_s=r.t_candidate_s, baseline_s=r.t_baseline_s, task_flops=task_flops)
    if tr is None:
        return {}
    return {"best_roof_fraction": round(tr.fraction, 4), "best_sol_score": None if tr.sol is None else round(tr.sol, 4),
            "best_roof_s": tr.roof_s, "best_t_s": tr.measured_s, "best_roof_bound": tr.bound,
            "roof": f"{tr.peaks_key} ({tr.peaks_source})"}


def _edit_kernels(edit) -> list[str]:
    """The kernels (PrimFunc names) an edit works on: a trace's or a source's target, a batch's traces."""
    if edit is None or edit.level == "L0":
        return []
    if edit.kind == "traces":
        return list((edit.payload or {}).get("traces", {}))
    return [edit.target] if edit.target else []


def kernel_budget(nodes, near_roof: float) -> list[dict[str, Any]]:
    """Issue 44, item 4: where the run's evaluations went, per kernel (the root's, then those graph edits
    made), and why.
    Evaluations go by time share x distance to the roof (agents/common.py rank_kernels, the router's
    scores); a kernel at `near_roof` of its roof or above is left alone. Per kernel: its share and roof
    fraction at the root, its score, the evaluations and seconds of the nodes whose edit worked on it,
    its roof fraction in the best profile that has it, and the reason in words."""
    # the root's kernels, then those a graph edit made (fast_math's gelu_tanh_fast), each from the first
    # profile that has it
    rows, seen, since = [], set(), {}
    for n in nodes:
        for r in (n.profile or {}).get("kernels") or []:
            if r.get("name") and r["name"] not in seen:
                seen.add(r["name"])
                rows.append(r)
                if n.parent is not None:
                    since[r["name"]] = n.id
    if not rows:
        return []
    spent: dict[str, list[float]] = {}
    for n in nodes:
        cost = n.meta.get("cost_s", n.meta.get("eval_s"))
        if cost is None:  # never evaluated: an edit that did not apply, or one the budget did not reach
            continue
        for k in _edit_kernels(n.edit):
            spent.setdefault(k, []).append(float(cost))
    latest: dict[str, float] = {}  # the last evaluated profile's roof fraction per kernel (node order)
    for n in nodes:
        for r in (n.profile or {}).get("kernels") or []:
            if r.get("roof_fraction") is not None:
                latest[r["name"]] = float(r["roof_fraction"])
    out = []
    ranked = sorted((r for r in rows if r.get("roof_fraction") is None or float(r["roof_fraction"]) < near_roof),
                    key=lambda r: -float(r.get("share") or 0.0) * (1.0 - min(1.0, float(r.get("roof_fraction") or 0.0))))
    rank = {r["name"]: i + 1 for i, r in enumerate(ranked)}
    for r in sorted(rows, key=lambda r: (r["name"] in since, -float(r.get("share") or 0.0)))[:16]:
        name, share = r["name"], float(r.get("share") or 0.0)
        frac = r.get("roof_fraction")
        gap = 1.0 - min(1.0, max(0.0, float(frac))) if frac is not None else 1.0
        evals = spent.get(name, [])
        if frac is not None and float(frac) >= near_roof:
            why = f"left alone: at {float(frac):.0%} of its roof (>= {near_roof:.0%})"
        elif evals:
            why = f"ranked #{rank.get(name, '?')} by share x distance to roof ({share:.0%} x {gap:.0%})"
        elif share < 0.01:
            why = "under 1% of the time: no edit was worth an evaluation"
        elif not any(n.parent is not None and n.meta.get("cost_s", n.meta.get("eval_s")) is not None for n in nodes):
            why = f"ranked #{rank.get(name, '?')} ({share:.0%} x {gap:.0%}); the budget ended before any edit was evaluated"
        else:
            why = (f"ranked #{rank.get(name, '?')} ({share:.0%} x {gap:.0%}); no edit of its own: the budget went "
                   "to higher-ranked kernels or to graph (L0) edits")
        if name in since:
            why += f" (a kernel of node #{since[name]}'s graph: share and roof from its profile)"
        out.append({"kernel": name, "share": round(share, 4), "roof_fraction": None if frac is None else round(float(frac), 4),
                    "score": round(share * gap, 4), "evaluations": len(evals), "eval_s": round(sum(evals), 1),
                    "roof_fraction_last": latest.get(name), "why": why})
    return out


def kernel_budget_lines(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    lines = ["## Budget by kernel", "",
             "Evaluations go to kernels by time share x distance to their measured roof; a kernel at "
             "`router.near_roof` of its roof is left alone (the root's kernels, then those graph edits made; an L0 "
             "edit works on the whole graph and is not counted here).", "",
             "| kernel | share | roof (root) | score | evaluations | seconds | roof (last profile) | why |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        rf = "-" if r["roof_fraction"] is None else f"{r['roof_fraction']:.1%}"
        rl = "-" if r["roof_fraction_last"] is None else f"{r['roof_fraction_last']:.1%}"
        lines.append(f"| {r['kernel']} | {r['share']:.1%} | {rf} | {r['score']:.3f} | {r['evaluations']} | "
                     f"{r['eval_s']:.0f} | {rl} | {r['why']} |")
    return [*lines, ""]


def audit_summary(nodes, best_node) -> dict[str, Any]:
    """What a reader should check before trusting the numbers (issue 43): the nodes marked for audit
    (benchmark/judge/audit.py: a >10x speedup against a tuned baseline or an engine, a degenerate reference),
    those timed under the physical floor (benchmark/judge/floor.py), and the platform of the best's timing."""
    audited = [{"node": n.id, "reasons": n.result.extra["audit"]} for n in nodes
               if n.result is not None and n.result.extra.get("audit")]
    below = [n.id for n in nodes if n.result is not None and n.result.error_kind == "below_physical_floor"]
    best = best_node.result if best_node is not None and best_node.result is not None else None
    return {"audit": audited[:20], "audited_nodes": len(audited), "below_floor_nodes": below[:20],
            "best_platform": best.extra.get("platform") if best is not None else None}


def audit_lines(summary: dict[str, Any]) -> list[str]:
    from benchmark.judge import platform_line as line

    out = []
    if summary.get("audited_nodes"):
        first = "; ".join(f"#{a['node']}: {', '.join(a['reasons'])}" for a in summary["audit"][:5])
        out.append(f"- AUDIT: {summary['audited_nodes']} node(s) marked for audit (benchmark/judge/audit.py): {first}")
    if summary.get("below_floor_nodes"):
        out.append(f"- below the physical floor (not speedups): nodes {summary['below_floor_nodes']}")
    if summary.get("best_platform"):
        out.append(f"- platform of the best's timing: {line(summary['best_platform'])}")
    return out


def roof_line(summary: dict[str, Any]) -> str | None:
    """The report's line on the roof, None when the run has no roof figures."""
    from profilers.roof import fmt_fraction, fmt_sol

    if summary.get("best_roof_fraction") is None:
        return None
    return (f"- roof: at {fmt_fraction(summary['best_roof_fraction'])} of the measured roof "
            f"({summary.get('best_roof_bound', '?')}-bound; {summary['best_roof_s'] * 1e3:.3f} ms at the roof, "
            f"{summary['best_t_s'] * 1e3:.3f} ms judged); SOL score {fmt_sol(summary.get('best_sol_score'))} "
            f"(1 at the roof, 0.5 at {summary['baseline']}); roof {summary.get('roof', '?')}")


def export_best(run_dir: Path, task: Task, tree: Tree, best_node, evaluator) -> dict[str, str]:
    """best.so (a Relax VM executable) and its loader, from one more build of the best candidate."""
    from leka import ir

    cand = ir.Candidate.model_validate_json(tree.artifact(best_node.id, "candidate.json"))
    so = run_dir / "best.so"
    # build and export only: the node's own evaluation checked this candidate, and a second check cost a
    # Level-3 task minutes past its budget (issue 44)
    res = evaluator.evaluate(task, cand, time_it=False, export=str(so), check=False)
    if res.error_kind is None and so.exists():
        (run_dir / "load_best.py").write_text(LOADER.format(task=task.id))
        return {"so": "best.so", "loader": "load_best.py"}
    return {"error": res.error or "export failed"}


def baseline_label(kind: str, trials: int, backend: str = "llvm") -> str:
    """What a speedup is measured against, in words, version and settings included (summary.json,
    report.md, the live view): benchmark/engines.py names every kind, e.g. "MNN 3.6.1 CPU, 2 threads, fp32"."""
    from benchmark import baselines

    return baselines.label(kind, backend, trials=trials)


def tuner_summary(run_dir: Path) -> dict[str, Any]:
    """What the MetaSchedule tool did in a run: calls, trials and seconds (all charged to the budget)."""
    calls = [json.loads(p.read_text()) for p in sorted((run_dir / "work" / "ms-l1").glob("*/tuning.json"))]
    return {"calls": len(calls), "ok": sum(1 for c in calls if c.get("ok")),
            "trials": sum(int(c.get("trials") or 0) for c in calls),
            "seconds": round(sum(float(c.get("seconds") or 0.0) for c in calls), 1), "kernels": calls}


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


def noise_floor_text(nf: dict[str, Any] | None) -> str:
    """An A-vs-A of the baseline (benchmark/judge/timing.py noise_floor) as report text."""
    from benchmark.judge import fmt_interval

    if not nf or not nf.get("speedup"):
        return "not measured (the root was not timed)"
    return (f"the baseline against itself {fmt_interval(nf['speedup'], nf.get('lo'), nf.get('hi'))} "
            f"({nf.get('pairs')} pairs, in the root's evaluation): a speedup inside this is noise")


def render_report(summary: dict[str, Any], tree, best_node, edit_summary, ledger) -> str:
    from benchmark.judge import fmt_interval

    lines = [f"# LEKA run: {summary['task']} ({summary['backend']})", ""]
    sp = summary["best_speedup"]
    ci = fmt_interval(sp, summary.get("best_speedup_lo"), summary.get("best_speedup_hi")) if sp else "n/a"
    lines += [f"- best node: #{summary['best_node']}, speedup vs {summary['baseline']}: {ci} "
              f"({round(100 * summary.get('ci_level', 0.95))}% interval; faster, its lower bound above 1: "
              f"{summary.get('best_faster', False)}), correct: {summary['best_correct']}"
              + (" - timed on a loaded machine" if summary.get("best_loaded") else ""),
              *([line] if (line := roof_line(summary)) else []), *audit_lines(summary),
              f"- loaded machine: {summary.get('loaded_evaluations', 0)} of {summary.get('timed_evaluations', 0)} "
              "timed evaluations ran while other processes used the CPU (their intervals carry that noise)",
              f"- noise floor: {noise_floor_text(summary.get('noise_floor'))}",
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
    lines += kernel_budget_lines(summary.get("kernel_budget") or [])
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
    lines += failure_lines(summary, tree, edit_summary)
    lines += ["Files: `tree.sqlite` (every node), `tree.html` (interactive view), `config.yaml`, `summary.json`, "
              "`best.so` + `load_best.py`.", ""]
    return "\n".join(lines)


def failure_lines(summary: dict[str, Any], tree, edit_summary) -> list[str]:
    """The run's failures by class (leka.core.failures) and its first failed attempts, each with its class."""
    out: list[str] = []
    fails = summary.get("failures_by_class") or {}
    if fails:
        from leka.core.failures import label

        out += ["## Failures by class", "", "| class | failed evaluations |", "|---|---|",
                *(f"| {label(c)} | {n} |" for c, n in fails.items()), ""]
    failed = [n for n in tree.nodes() if n.status == "failed"][:10]
    if failed:
        from leka.core.failures import classify

        out += ["## Failed attempts (first 10)", ""]
        for n in failed:
            r = n.result
            err = (r.error or "").splitlines()[0][:200] if r else ""
            cls = (r.failure_class or classify(r.error_kind, r.error, r.correct)) if r else None
            out.append(f"- #{n.id} {n.level} {edit_summary(n.edit)}: {r.error_kind if r else ''}"
                       f"{f' ({cls})' if cls else ''}: {err}")
        out.append("")
    return out


def summary_table(s: dict[str, Any]) -> Table:
    t = Table(title=f"LEKA summary: {s['task']} ({s['backend']})")
    t.add_column("metric")
    t.add_column("value")
    from benchmark.judge import fmt_interval
    from profilers.roof import fmt_fraction, fmt_sol

    sp = s.get("best_speedup")
    speed = fmt_interval(sp, s.get("best_speedup_lo"), s.get("best_speedup_hi")) if sp else "n/a"
    if s.get("emulated") and sp:
        speed += " (emulated board: not a speedup)"
    rows = [("best node", s.get("best_node")),
            (f"best speedup vs {s.get('baseline')}", speed),
            ("fraction of roof / SOL score",
             f"{fmt_fraction(s.get('best_roof_fraction'))} / {fmt_sol(s.get('best_sol_score'))}"),
            ("loaded evaluations", f"{s.get('loaded_evaluations', 0)} of {s.get('timed_evaluations', 0)}"),
            ("noise floor (A-vs-A)", noise_floor_text(s.get("noise_floor"))),
            ("best correct", s.get("best_correct")), ("nodes by level", s.get("nodes_by_level")),
            ("evaluations", s.get("evaluations")), ("budget used", f"{s.get('budget_used_s', 0):.0f} s"),
            ("stopped", s.get("stop_reason") or "finished"), ("run folder", s.get("run_dir")),
            ("export", (s.get("export") or {}).get("so", (s.get("export") or {}).get("error")))]
    for k, v in rows:
        t.add_row(k, str(v))
    return t


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
