"""The `leka` command. Sub-commands live with their component (`benchmark/cli.py`, ...) and are
mounted here; bad input becomes one clear line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import sys
import warnings

import typer

from leka.backends import BackendError, all_backends, get_backend
from leka.core.cli_options import backend_option
from leka.core.types import UserError

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="LEKA: layered agents that optimise tensor programs through TVM.")


def _mount() -> None:
    from leka.opencl_cli import app as opencl_app

    app.add_typer(opencl_app, name="opencl", help="OpenCL runtime plugin: build it from a TVM source folder.")
    from leka.board import app as board_app

    app.add_typer(board_app, name="board", help="An emulated ARM board (qemu): setup, emulate, stop, status.")
    from benchmark.cli import app as bench_app
    from leka.exp.cli import bench_oneshot_cmd

    # the one-shot benchmark runs on the experiment grid (leka.exp), above the benchmark layer
    bench_app.command("oneshot")(bench_oneshot_cmd)
    app.add_typer(bench_app, name="bench", help="EdgeKernelBench: list tasks, evaluate, tune baselines, measure the roof.")
    from candidate_tree.cli import app as tree_app
    app.add_typer(tree_app, name="tree", help="Candidate tree: show nodes, best-k, lineage; export HTML/JSON.")
    from leka.exp.cli import app as exp_app
    app.add_typer(exp_app, name="exp", help="Experiments: a grid of (task, arm, seed) runs on Ray, resumable; report.")
    from leka.llm.cli import app as llm_app
    app.add_typer(llm_app, name="llm", help="The local small model: `leka llm serve` (after `make llm-local`).")


@app.command("run")
def run_cmd(
    task: str = typer.Option(None, "--task", help="task id or path of a KernelBench-format file"),
    backend: str = backend_option(),
    device: str = typer.Option(None, "--device", help="local | rpc://HOST:PORT/KEY (a board at a TVM RPC tracker)"),
    budget: str = typer.Option("10m", "--budget", help="wall clock, e.g. 90s, 10m, 1h"),
    policy: str = typer.Option("rules", "--policy", help="rules (offline, default) | llm"),
    model: str = typer.Option("", "--model", help="openai:M | anthropic:M | compat:URL|M | scripted:F | replay:F"),
    routing: str = typer.Option("profile", "--routing", help="profile | round_robin | random | fixed:LEVEL"),
    layers: str = typer.Option(None, "--layers", help="levels the run may edit, e.g. L1,L2 (default: every level)"),
    seed: int = typer.Option(0, "--seed"),
    out: str = typer.Option("runs", "--out", help="folder for run folders"),
    max_evals: int = typer.Option(None, "--max-evals", help="stop after this many evaluations"),
    config: list[str] = typer.Option([], "--config", help="YAML overlay (repeatable)"),
    overrides: list[str] = typer.Option([], "--set", help="key=value override (repeatable)"),
    resume: str = typer.Option(None, "--resume", help="continue a killed run: RUN_DIR"),
    quiet: bool = typer.Option(False, "--quiet"),
) -> None:
    """Optimise one task end to end: profile, route, propose edits at each level, evaluate, keep the tree."""
    from leka.core.config import load_config
    from leka.run import parse_duration, run

    get_backend(backend)
    if policy not in ("rules", "llm"):
        raise UserError(f"unknown policy {policy!r}; use rules or llm")
    # typed values straight into the config (no `key=value` strings to quote and parse back); the
    # config's validators check them, and a `--set` still wins over them
    run_opts = {"budget_s": parse_duration(budget), "policy": policy, "routing": routing, "seed": seed, "out": out,
                # None: every level of the table, the config's own included (levels.extra)
                "layers": [x.strip() for x in layers.split(",") if x.strip()] if layers is not None else None}
    options: dict = {"backend": backend, "run": run_opts}
    if model:
        options["llm"] = {"model": model}
    if device:
        from leka.core.devices import parse_device

        parse_device(device)
        options["device"] = {"url": device}
    if max_evals is not None:
        if max_evals < 1:
            raise UserError("--max-evals must be >= 1")
        run_opts["max_evals"] = max_evals
    # a resumed run keeps the config its folder holds: the options are not read
    cfg = None if resume else load_config(config, list(overrides), options=options)
    summary = run(task, cfg=cfg, resume=resume, quiet=quiet)
    if not summary.get("best_correct"):
        raise SystemExit(1)


@app.command("oneshot")
def oneshot_cmd(
    task: str = typer.Option(..., "--task", help="task id or path of a KernelBench-format file"),
    model: str = typer.Option(..., "--model", help="openai:M | anthropic:M | compat:URL|M | scripted:F | replay:F"),
    backend: str = backend_option(),
    out: str = typer.Option("runs", "--out", help="folder for run folders"),
    json_out: str = typer.Option(None, "--json", help="also write the result JSON here"),
    config: list[str] = typer.Option([], "--config", help="YAML overlay (repeatable)"),
    overrides: list[str] = typer.Option([], "--set", help="key=value override (repeatable)"),
    quiet: bool = typer.Option(False, "--quiet"),
) -> None:
    """The one-shot arm: one LLM call writes the whole candidate; it is evaluated once
    (Compile@1, Correct@1, Fast@1, tokens). Exit 0 when the model answered, whatever the metrics;
    1 when no reply came (provider down after retries)."""
    from leka.oneshot import oneshot

    get_backend(backend)
    res = oneshot(task, model, backend=backend, out=out, json_out=json_out, config_files=config,
                  overrides=list(overrides), quiet=quiet)
    if res.llm_failure:
        raise SystemExit(1)


@app.command("backends")
def backends_cmd() -> None:
    """List the backend table: where each backend runs, its L2 languages, its task domain."""
    for b in all_backends():
        why = b.unavailable()
        print(f"{b.name:<8} runs on {','.join(b.runs_on):<10} L2 {','.join(b.l2_languages):<12} "
              f"domain {b.domain:<9} {'here' if why is None else 'not here'}")


baseline_app = typer.Typer(no_args_is_help=True, add_completion=False)
app.add_typer(baseline_app, name="baseline", help="Baseline arms run on a task: claude-code.")


@baseline_app.command("claude-code")
def claude_code_cmd(
    task: str = typer.Option(..., "--task", help="task id or path of a KernelBench-format file"),
    backend: str = backend_option(),
    budget: str = typer.Option("90m", "--budget", help="wall clock, e.g. 90m (the paper: 90m Level 1, 155m Levels 2-3)"),
    model: str = typer.Option(..., "--model", help="model name the CLI sends (anthropic:NAME accepted)"),
    out: str = typer.Option("runs", "--out", help="folder for run folders"),
    base_url: str = typer.Option(None, "--base-url", help="Anthropic-compatible endpoint (default $ANTHROPIC_BASE_URL)"),
    max_retries: int = typer.Option(None, "--max-retries", help="the CLI's API retries (default: its own)"),
    config: list[str] = typer.Option([], "--config", help="YAML overlay (repeatable)"),
    overrides: list[str] = typer.Option([], "--set", help="key=value override (repeatable)"),
) -> None:
    """The Claude Code arm: the real Claude Code CLI, headless, edits the task's candidate files under
    the same evaluator and wall clock; the best candidate it measured is evaluated again. Key from
    $ANTHROPIC_API_KEY. Exit 0 when the CLI ran (whatever the metrics), 1 when it failed."""
    from leka.arms.claude_code import run_claude_code
    from leka.run import parse_duration

    get_backend(backend)
    res = run_claude_code(task, backend=backend, budget_s=parse_duration(budget), model=model, out_dir=out,
                          base_url=base_url, config_files=config, overrides=overrides, max_retries=max_retries,
                          quiet=False)
    print(res.model_dump_json(include={"task", "status", "error", "turns", "input_tokens", "output_tokens",
                                       "evals", "compiled", "correct", "speedup", "run_dir"}))
    if res.status != "ok":
        raise SystemExit(1)


@app.command("demo")
def demo_cmd(budget: str = typer.Option("2m", "--budget")) -> None:
    """The README's first command: optimise the embedded MobileNetV2 block for a short budget."""
    from importlib import resources

    from leka.run import parse_duration, run

    # package data of `benchmark`, so the demo finds it in a wheel install too
    task = str(resources.files("benchmark") / "examples" / "mbv2_block.py")
    run(task, overrides=[f"run.budget_s={parse_duration(budget)}", "run.out=runs/demo"])


def main() -> None:
    # torch.export prints FutureWarnings about its own internals on every call
    warnings.filterwarnings("ignore", category=FutureWarning)
    os.environ.setdefault("TVM_LOG_DEBUG", "0")
    _mount()
    try:
        app()
    except (UserError, BackendError) as e:
        print(f"leka: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
