"""`leka oneshot`: the one-shot arm. One LLM call writes the whole candidate in the unified IR from
the PyTorch reference; it is built and evaluated once (Compile@1, Correct@1, Fast@1, tokens).

No repairs, no search: the model's single reply is the candidate. Its edits are applied in the
order given to the task's root candidate; a reply that does not parse, or any edit that is not
legal, makes the candidate fail to compile (nothing is evaluated then, and the reasons are kept).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from leka.core.config import LekaConfig, dump_config, load_config
from leka.core.types import Edit, UserError

# Bounds on what the prompt shows besides the reference (the template clips again as a last guard).
MAX_TIR_CHARS = 24_000
MAX_FUNC_CHARS = 6_000


class OneShotResult(BaseModel):
    """What `leka oneshot` prints and writes (RUN_DIR/oneshot.json, and --json OUT)."""

    task: str
    backend: str
    model: str
    run_dir: str
    compile_at_1: bool = False
    correct_at_1: bool = False
    fast_at_1: bool = False
    speedup: float | None = None
    speedup_lo: float | None = None  # the speedup's interval (benchmark/judge/stats.py); Fast@1 needs lo > 1
    speedup_hi: float | None = None
    timing_valid: bool | None = None
    machine_loaded: bool = False  # other processes used the machine during the timing
    error_kind: str | None = None
    error: str | None = None
    failure_class: str | None = None  # leka.core.failures: what went wrong, when it did
    evaluated: bool = False  # False: generated only (evaluate=False: the grid's judge evaluates it)
    edits: list[dict[str, Any]] = Field(default_factory=list)  # as the model wrote them (parsed)
    rejected: list[str] = Field(default_factory=list)  # why an item of the reply was not usable
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    ledger: dict[str, Any] = Field(default_factory=dict)  # the call's ledger (Ledger.to_dict, no records)
    llm_failure: str | None = None  # the provider gave no reply (after its retries)
    wall_s: float = 0.0


def _views(cand, root, task) -> dict[str, str]:
    from leka import tvm_adapter as A
    from leka.ir import views as V

    out = {"reference": task.path.read_text(), "relax": V.relax_view(cand)}
    try:
        names = [r["name"] for r in V.kernel_table(cand, root_params=root.params)]
        out["kernels"] = " ".join(names)
        parts, used = [], 0
        for name in names:
            text = V.tir_view(cand, name, root_params=root.params, scheduled=False, max_chars=MAX_FUNC_CHARS)
            if used + len(text) > MAX_TIR_CHARS:
                parts.append(f"# ... {len(names) - len(parts)} more PrimFuncs not shown: "
                             f"{', '.join(names[len(parts):])}")
                break
            parts.append(f"# PrimFunc {name} (the name L1 / L2 edits give as `target`)\n{text}")
            used += len(text)
        out["tir"] = "\n\n".join(parts)
    except Exception as e:  # noqa: BLE001 - the TIR view helps but the reference is what the model needs
        out["tir"] = f"[PrimFuncs unavailable: {A.error_text(e)}]"
    return out


def oneshot(task_ref: str, model: str, *, backend: str = "llvm", out: str = "runs", json_out: str | None = None,
            config_files: list[str] = (), overrides: list[str] = (), quiet: bool = False,
            evaluate: bool = True) -> OneShotResult:
    """One call, its edits applied in order; with `evaluate` the candidate is evaluated once (else only
    written to RUN_DIR/candidate.json, for a caller that judges it itself: the experiment grid)."""
    from agents.llm_agent import LLMAgent
    from benchmark.roots import load_root
    from leka import ir
    from leka import tvm_adapter as A
    from leka.core.protocols import AgentContext
    from leka.ir.edits import apply_edit

    t0 = time.monotonic()
    cfg, task, ledger, provider, run_dir = _open(task_ref, model, backend, out, config_files, overrides)
    root = load_root(task, cfg.baseline.cache_dir)
    cand = ir.root_candidate(task, cfg.backend, root)
    views = _views(cand, root, task)
    state = {"cand": cand}

    def check(_root_cand, edit: Edit) -> str | None:
        # edits build on one another in the order written: the L1 names are those of the new L0 module,
        # so each applies to the candidate the earlier ones made, not to the root the agent was shown
        got = apply_edit(state["cand"], edit, workdir=run_dir / "work", root_params=root.params)
        if got.ok:
            state["cand"] = got.candidate
        return got.error

    agent = LLMAgent("oneshot", provider, views=lambda c, x: views, check=check, max_repairs=0,
                     max_tokens=cfg.llm.max_tokens, temperature=cfg.llm.temperature,
                     context_tokens=cfg.llm.context_tokens, prompt_tokens=cfg.llm.prompt_tokens,
                     small_schema=cfg.llm.small_schema,
                     on_report=lambda r: (run_dir / "llm_reports.jsonl").write_text(r.model_dump_json() + "\n"))
    target = A.make_target(cfg.backend)
    actx = AgentContext(task_id=task.id, backend=cfg.backend, level="oneshot", seed=cfg.run.seed,
                        vector_lanes=A.vector_lanes_fp32(target),
                        num_cores=int(A.target_json(target).get("num-cores", 2) or 2))
    edits = agent.propose(cand, actx)
    usage = ledger.usage
    res = OneShotResult(task=task.id, backend=cfg.backend, model=provider.name, run_dir=str(run_dir),
                        edits=[e.model_dump() for e in edits], calls=ledger.calls,
                        input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                        cost_usd=round(usage.cost_usd, 6), ledger=ledger.to_dict(records=False))
    if _reply_usable(res, agent, edits):
        (run_dir / "candidate.json").write_text(state["cand"].model_dump_json(indent=1))
        if evaluate:
            _evaluate(res, cfg, task, state["cand"], run_dir)
    else:
        from leka.core.failures import classify

        res.failure_class = classify(res.error_kind, res.error)
    res.wall_s = round(time.monotonic() - t0, 2)
    _save(res, run_dir, json_out)
    if not quiet:
        _print(res)
    return res


def _open(task_ref: str, model: str, backend: str, out: str, config_files: list[str], overrides: list[str]):
    """(config, task, ledger, recording provider, run folder); a bad model spec or a missing key fails
    before the run folder is made."""
    from benchmark.task import resolve
    from leka.backends import require_runnable
    from leka.llm.base import Ledger
    from leka.llm.factory import make_provider
    from leka.llm.scripted import Recorder
    from leka.run import _check_out, new_run_dir

    if not model:
        raise UserError("--model is required: openai:MODEL | anthropic:MODEL | compat:URL|MODEL | scripted:F")
    cfg: LekaConfig = load_config(list(config_files), [*overrides, f"backend={backend}", f"llm.model='{model}'",
                                                       "llm.max_repairs=0"])
    require_runnable(cfg.backend, cfg.device.url)
    task = resolve(task_ref)
    ledger = Ledger(max_calls=1)  # one call by definition
    provider = make_provider(cfg.llm.model, cfg.llm, ledger)
    outp = Path(out)
    _check_out(outp)
    run_dir = new_run_dir(outp, f"oneshot-{task.id}", cfg.run.seed)
    dump_config(cfg, run_dir / "config.yaml")
    return cfg, task, ledger, Recorder(provider, run_dir / "llm_transcript.jsonl"), run_dir


def _reply_usable(res: OneShotResult, agent, edits: list[Edit]) -> bool:
    """Whether the reply's edits make a candidate to evaluate; if not, `res` says why (no reply from the
    model, no edits, or the edits that were not legal)."""
    rep = agent.last_report
    rejected = [err for errs in (rep.errors if rep else []) for err in errs]
    res.rejected = rejected
    if rep is not None and rep.calls == 0:
        res.llm_failure = rep.failure or "no reply"
        res.error_kind, res.error = "compile", f"no reply from the model: {res.llm_failure}"
        return False
    if not edits or rejected:
        res.error_kind = "compile"
        res.error = "; ".join(rejected)[:4000] if rejected else (agent.last_error or "the reply held no edits")
        return False
    return True


def _save(res: OneShotResult, run_dir: Path, json_out: str | None) -> None:
    text = res.model_dump_json(indent=1)
    (run_dir / "oneshot.json").write_text(text)
    if json_out:
        p = Path(json_out)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _evaluate(res: OneShotResult, cfg: LekaConfig, task, final, run_dir: Path) -> None:
    """Evaluate the candidate the edits made, once; its metrics go into `res`."""
    from benchmark.judge import Evaluator
    from benchmark.metrics import fast_at

    ev = Evaluator(cfg.evaluator, cfg.backend, cfg.baseline, device=cfg.device).evaluate(task, final)
    (run_dir / "eval.json").write_text(ev.model_dump_json(indent=1))
    res.compile_at_1, res.correct_at_1 = ev.compiled, ev.correct
    res.fast_at_1 = fast_at([ev], 1.0) == 1.0
    res.speedup, res.timing_valid = ev.speedup, ev.timing_valid
    res.speedup_lo, res.speedup_hi, res.machine_loaded = ev.speedup_lo, ev.speedup_hi, ev.loaded
    res.error_kind, res.error, res.failure_class, res.evaluated = ev.error_kind, ev.error, ev.failure_class, True


def _print(r: OneShotResult) -> None:
    from rich.console import Console
    from rich.table import Table

    from benchmark.judge import fmt_interval

    t = Table(title=f"LEKA one-shot: {r.task} ({r.backend}, {r.model})")
    t.add_column("metric")
    t.add_column("value")
    rows = [("Compile@1", r.compile_at_1), ("Correct@1", r.correct_at_1), ("Fast@1", r.fast_at_1),
            ("speedup vs untuned", fmt_interval(r.speedup, r.speedup_lo, r.speedup_hi) if r.speedup else "n/a"),
            ("machine loaded during timing", r.machine_loaded),
            ("edits", len(r.edits)), ("tokens (in / out)", f"{r.input_tokens} / {r.output_tokens}"),
            ("cost", f"${r.cost_usd:.4f}"), ("error", (r.error or "-")[:200]),
            ("failure class", r.failure_class or "-"), ("run folder", r.run_dir)]
    for k, v in rows:
        t.add_row(k, str(v))
    Console().print(t)
    print(json.dumps({"compile@1": r.compile_at_1, "correct@1": r.correct_at_1, "fast@1": r.fast_at_1,
                      "speedup": r.speedup, "speedup_lo": r.speedup_lo, "speedup_hi": r.speedup_hi, "input_tokens": r.input_tokens, "output_tokens": r.output_tokens}))
