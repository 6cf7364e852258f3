"""`leka exp ...`: run a grid of (task, arm, seed) jobs on Ray, resume it, show its state, report it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import typer
import yaml
from rich.console import Console
from rich.table import Table

from leka.core.types import UserError
from leka.exp import config as C

app = typer.Typer(no_args_is_help=True, add_completion=False)
console = Console()
RESOLVED = "experiment.yaml"  # the resolved config, written into EXP_DIR


def _exp_dir(d: str) -> Path:
    p = Path(d)
    if not (p / RESOLVED).is_file():
        raise UserError(f"{d}: not an experiment folder (no {RESOLVED})")
    return p


def start(config: str, out: str | None = None) -> tuple[Path, C.ExpConfig, list[C.Job]]:
    return start_cfg(C.load(config), out)


def start_cfg(cfg: C.ExpConfig, out: str | None = None) -> tuple[Path, C.ExpConfig, list[C.Job]]:
    jobs = C.expand(cfg)
    exp_dir = Path(out) if out else Path("experiments/out") / f"{cfg.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    if (exp_dir / RESOLVED).exists():
        raise UserError(f"{exp_dir} already holds an experiment; continue it with --resume {exp_dir}")
    exp_dir.mkdir(parents=True, exist_ok=True)
    C.dump(cfg, exp_dir / RESOLVED)
    (exp_dir / "jobs.json").write_text(json.dumps([j.model_dump() for j in jobs], indent=1))
    return exp_dir, cfg, jobs


def load_dir(exp_dir: Path) -> tuple[C.ExpConfig, list[C.Job]]:
    cfg = C.parse(yaml.safe_load((exp_dir / RESOLVED).read_text()), str(exp_dir / RESOLVED))
    jobs = [C.Job.model_validate(j) for j in json.loads((exp_dir / "jobs.json").read_text())]
    return cfg, jobs


@app.command("run")
def run_cmd(
    config: str = typer.Argument(None, help="experiment YAML (experiments/configs/*.yaml)"),
    resume: str = typer.Option(None, "--resume", help="continue a killed grid: EXP_DIR"),
    out: str = typer.Option(None, "--out", help="EXP_DIR (default experiments/out/NAME-STAMP)"),
    address: str = typer.Option(None, "--address", help="join a Ray cluster at HOST:PORT (default: local Ray)"),
    workers: int = typer.Option(None, "--workers", help="jobs at once (default: CPU cores)"),
    report: bool = typer.Option(True, "--report/--no-report", help="write report.md/html at the end"),
) -> None:
    """Run every (task, arm, seed) job; each ends as one row of EXP_DIR/results.sqlite."""
    from leka.exp.scheduler import run_grid

    if (config is None) == (resume is None):
        raise UserError("give CONFIG.yaml or --resume EXP_DIR")
    if workers is not None and workers < 1:
        raise UserError("--workers must be >= 1")
    if resume:
        exp_dir = _exp_dir(resume)
        cfg, jobs = load_dir(exp_dir)
    else:
        exp_dir, cfg, jobs = start(config, out)
    n = workers or len(os.sched_getaffinity(0))
    console.print(f"[bold]experiment[/] {cfg.name}: {len(jobs)} jobs, {n} at once -> {exp_dir}")
    counts = run_grid(exp_dir, cfg, jobs, address=address, workers=n)
    console.print(f"grid: {counts.get('done', 0)}/{len(jobs)} done, {counts.get('failed', 0)} failed")
    if report:
        from leka.exp.report import write_report

        paths = write_report(exp_dir)
        console.print(f"report: {', '.join(str(p) for p in paths)}")


@app.command("status")
def status_cmd(exp_dir: str = typer.Argument(..., help="EXP_DIR")) -> None:
    """Counts by state, the running jobs and the failed ones."""
    from leka.exp.store import Store

    d = _exp_dir(exp_dir)
    st = Store(d)
    try:
        c = st.counts()
        print(f"{c.get('done', 0)} done ({c.get('failed', 0)} failed), {c.get('running', 0)} running, "
              f"{c.get('pending', 0)} pending")
        t = Table(title=f"{d}: {c.get('done', 0)} done ({c.get('failed', 0)} failed), {c.get('running', 0)} running, "
                        f"{c.get('pending', 0)} pending")
        for col in ("job", "state", "attempt", "correct", "vs reference", "error"):
            t.add_column(col)
        for jid, state, attempt, correct, sp, err in st.conn.execute(
                "SELECT job_id, state, attempt, correct, speedup_ref, error FROM jobs ORDER BY job_id"):
            t.add_row(jid, state, str(attempt), "" if correct is None else str(bool(correct)),
                      f"{sp:.2f}x" if sp else "-", (err or "")[:70])
        console.print(t)
        console.print(_cells_table(st))
        eta = _eta_s(st)
        print(f"ETA: {'unknown (no job finished yet)' if eta is None else f'{eta / 60:.1f} min'}")
    finally:
        st.close()


def _cells_table(st) -> Table:
    """Progress per cell (backend x arm over tasks and seeds): done / all, failed, running."""
    cells: dict[tuple[str, str], list[int]] = {}
    for spec, state, correct, err in st.conn.execute("SELECT spec, state, correct, error FROM jobs"):
        j = json.loads(spec)
        c = cells.setdefault((j["backend"], j["arm"]), [0, 0, 0, 0])  # all, done, failed, running
        c[0] += 1
        c[1] += state == "done"
        c[2] += state == "done" and not correct and err is not None
        c[3] += state == "running"
    t = Table(title="per cell")
    for col in ("backend", "arm", "done", "failed", "running"):
        t.add_column(col)
    for (b, a), (n, d, f, r) in sorted(cells.items()):
        t.add_row(b, a, f"{d}/{n}", str(f), str(r))
    return t


def _eta_s(st) -> float | None:
    """Remaining budgets x the measured wall-per-budget ratio, over the jobs running now (at least one)."""
    scale = st.time_per_budget()
    if scale is None:
        return None
    left = [json.loads(s)["budget_s"] for (s,) in st.conn.execute("SELECT spec FROM jobs WHERE state != 'done'")]
    (running,) = st.conn.execute("SELECT count(*) FROM jobs WHERE state='running'").fetchone()
    return sum(left) * scale / max(1, running)


@app.command("report")
def report_cmd(exp_dir: str = typer.Argument(..., help="EXP_DIR")) -> None:
    """Write EXP_DIR/report.md and the self-contained EXP_DIR/report.html from results.sqlite."""
    from leka.exp.report import write_report

    d = _exp_dir(exp_dir)
    paths = write_report(d)
    from leka.exp.oneshot_bench import TABLE_MD, write_table

    if (d / TABLE_MD).is_file():  # a one-shot benchmark's table, regenerated from the same rows
        paths += write_table(d)
    console.print(f"report: {', '.join(str(p) for p in paths)}")


@app.command("export")
def export_cmd(exp_dir: str = typer.Argument(..., help="EXP_DIR"),
               dest: str = typer.Argument(..., help="an empty or new folder")) -> None:
    """Copy what the report needs (rows, report, the run folders' small files, each job's best candidate)
    into DEST, to commit or share; `leka exp report DEST` regenerates the report from it."""
    from leka.exp.export import export

    src = _exp_dir(exp_dir)
    try:
        counts = export(src, Path(dest))
    except FileExistsError as e:
        raise UserError(str(e)) from None
    console.print(f"exported {counts['files']} files ({counts['bytes'] / 2**20:.1f} MiB) to {dest}"
                  + (f"; {counts['skipped_large']} over 2 MiB left out" if counts["skipped_large"] else ""))


def bench_oneshot_cmd(
    model: list[str] = typer.Option([], "--model", help="LLM spec (repeatable: one row group per model)"),
    backend: list[str] = typer.Option([], "--backend", help="backend name (repeatable; default llvm)"),
    subset: str = typer.Option(None, "--subset", help="a named subset (e.g. subset69) instead of the whole suite"),
    level: list[int] = typer.Option([], "--level", help="keep these levels (repeatable)"),
    task: list[str] = typer.Option([], "--task", help="task id or path (repeatable) instead of the whole suite"),
    limit_per_level: int = typer.Option(None, "--limit-per-level", help="the first N instances of each level"),
    trials: int = typer.Option(64, "--trials", help="the tuned reference: MetaSchedule at N trials (0: untuned)"),
    engines: str = typer.Option("auto", "--engines", help="auto (every production engine the backend takes) | "
                                "none | a comma list of ort,mnn,tensorrt"),
    out: str = typer.Option(None, "--out", help="EXP_DIR (default experiments/out/oneshot-STAMP)"),
    resume: str = typer.Option(None, "--resume", help="continue a killed benchmark: EXP_DIR"),
    workers: int = typer.Option(None, "--workers", help="instances at once (default: CPU cores)"),
    cache_dir: str = typer.Option(".leka-cache", "--cache-dir", help="where the tuned databases are cached"),
    sets: list[str] = typer.Option([], "--set", help="LEKA config override key=value for every job (repeatable)"),
    name: str = typer.Option("oneshot", "--name", help="the experiment's name"),
) -> None:
    """The one-shot benchmark (the paper's Table 1): one generation per instance and model, judged against
    MetaSchedule-N and each production engine the backend takes; EXP_DIR/oneshot_table.md + .html."""
    from leka.backends import require_runnable
    from leka.exp.oneshot_bench import make_config, write_table
    from leka.exp.report import write_report
    from leka.exp.scheduler import run_grid

    if workers is not None and workers < 1:
        raise UserError("--workers must be >= 1")
    if resume:
        exp_dir = _exp_dir(resume)
        cfg, jobs = load_dir(exp_dir)
    else:
        engs = [e.strip() for e in engines.split(",") if e.strip()]
        cfg = make_config(models=model, backends=backend or ["llvm"], subset=subset, levels=level or None, ids=task,
                          limit_per_level=limit_per_level, trials=trials, engines=engs, cache_dir=cache_dir,
                          run_set=sets, name=name)
        for b in cfg.backends:
            require_runnable(b)  # one line naming what is missing (cuda off a GPU), before any folder is made
        exp_dir, cfg, jobs = start_cfg(cfg, out)
    n = workers or len(os.sched_getaffinity(0))
    console.print(f"[bold]one-shot benchmark[/] {cfg.name}: {len(jobs)} jobs (instances x models x backends), {n} at once -> {exp_dir}")
    counts = run_grid(exp_dir, cfg, jobs, address=None, workers=n)
    console.print(f"grid: {counts.get('done', 0)}/{len(jobs)} done, {counts.get('failed', 0)} failed")
    paths = [*write_report(exp_dir), *write_table(exp_dir)]
    console.print(f"table: {', '.join(str(p) for p in paths)}")


@app.command("arms")
def arms_cmd() -> None:
    """The arm presets (name, recipe, overrides, what it tests)."""
    from leka.exp.arms import describe

    print(describe())
