"""`leka run`: set up a run folder (or reopen one to resume), build the policy's agents (leka/policy.py),
drive the graph under the live view (leka/live.py), and write the results (leka/report.py: tree.sqlite,
config.yaml, report.md, summary.json, the best candidate as a deployable .so)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from leka.core.config import LekaConfig, dump_config, load_config, validate_config
from leka.core.devices import use_board
from leka.core.types import UserError
from leka.live import LiveView, console
from leka.report import summary_table, write_results

if TYPE_CHECKING:
    from leka.core.task import Task
    from leka.policy import Agents


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


def run(task_ref: str | None, *, cfg: LekaConfig | None = None, config_files: list[str] = (),
        overrides: list[str] = (), resume: str | None = None, quiet: bool = False, live: bool | None = None,
        agents_factory: Callable[..., Agents] | None = None) -> dict[str, Any]:
    """A new run of `task_ref` under `cfg` (the command line builds it), or under the config that
    `config_files` and `overrides` make; or, with `resume`, the run folder's own config continued.
    `agents_factory(cfg, root, task, run_dir) -> (agents, router, ledger)` replaces the policy's agents
    (the experiment runner's `flat` arm); default leka.policy.make_agents."""
    if resume:
        cfg, task, run_dir = reopen(resume)
    else:
        cfg, task, run_dir = start(task_ref, cfg or load_config(list(config_files), list(overrides)), quiet)
    return drive(cfg, task, run_dir, resume=bool(resume), quiet=quiet, live=live, agents_factory=agents_factory)


def reopen(resume: str) -> tuple[LekaConfig, Task, Path]:
    """The run folder of a killed run, its config checked as a new run's is."""
    from benchmark.task import resolve
    from leka.backends import require_runnable

    run_dir = Path(resume)
    if not (run_dir / "config.yaml").is_file() or not (run_dir / "run.json").is_file():
        raise UserError(f"--resume {resume}: not a LEKA run folder (no config.yaml / run.json)")
    cfg = validate_config(yaml.safe_load((run_dir / "config.yaml").read_text()), f"--resume {resume}: config.yaml")
    require_runnable(cfg.backend, cfg.device.url)
    return cfg, resolve(json.loads((run_dir / "run.json").read_text())["task_path"]), run_dir


def start(task_ref: str | None, cfg: LekaConfig, quiet: bool) -> tuple[LekaConfig, Task, Path]:
    """A new run folder; what a bad argument can fail is checked before it is made."""
    from benchmark.task import resolve
    from leka.backends import require_runnable

    if task_ref is None:
        raise UserError("give --task ID|PATH (or --resume RUN_DIR)")
    require_runnable(cfg.backend, cfg.device.url)
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
    return cfg, task, run_dir


def drive(cfg: LekaConfig, task: Task, run_dir: Path, *, resume: bool, quiet: bool, live: bool | None,
          agents_factory: Callable[..., Agents] | None) -> dict[str, Any]:
    """The loop to its end (leka.loop.graph), then the results; the tree is closed whatever happens.
    On a board, agents and edit checks build for the board's CPU (its triple, features, cores) and
    compile L2 C/C++ with its cross compiler (leka.core.devices.use_board)."""
    with use_board(cfg.device):
        return _drive(cfg, task, run_dir, resume=resume, quiet=quiet, live=live, agents_factory=agents_factory)


def _drive(cfg: LekaConfig, task: Task, run_dir: Path, *, resume: bool, quiet: bool, live: bool | None,
           agents_factory: Callable[..., Agents] | None) -> dict[str, Any]:
    from benchmark.judge import Evaluator
    from benchmark.roots import load_root
    from candidate_tree import Tree
    from leka.loop.context import RunContext
    from leka.loop.graph import run_graph
    from leka.policy import idle_tuner, make_agents, with_tuner

    root = load_root(task, cfg.baseline.cache_dir)
    evaluator = Evaluator(cfg.evaluator, cfg.backend, cfg.baseline, device=cfg.device)
    agents, router, ledger = (agents_factory or make_agents)(cfg, root, task, run_dir)
    agents = with_tuner(cfg, agents, root, run_dir)
    tree = Tree(run_dir, defer=cfg.run.defer_followups)
    view = LiveView(cfg, task.id, quiet=quiet)
    ctx = RunContext(cfg=cfg, task=task, run_dir=run_dir, tree=tree, evaluator=evaluator, agents=agents,
                     router=router, root=root, ledger=ledger, on_event=view.event,
                     idle_agent=idle_tuner(cfg, root, run_dir))
    if not quiet:
        console.print(f"[bold]LEKA[/] {'resuming' if resume else 'run'} {task.id} -> {run_dir}")
    use_live = (console.is_terminal if live is None else live) and not quiet
    try:
        final = view.follow(lambda: run_graph(ctx, resume=resume)) if use_live else run_graph(ctx, resume=resume)
        summary = write_results(run_dir, cfg, task, tree, final, evaluator, ledger)
    finally:
        tree.close()
    if not quiet:
        console.print(summary_table(summary))
    return summary


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
                        "cached for later runs) ...", spinner="dots") if not quiet else contextlib.nullcontext():
        baselines.ensure_tuned(task, cfg.backend, cfg.baseline.trials, cfg.baseline.cache_dir, device=cfg.device)
