"""`leka bench ...`: list tasks, evaluate a task or a candidate file, tune and cache baselines, measure the roof."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from leka.core.cli_options import backend_option
from leka.core.types import UserError

app = typer.Typer(no_args_is_help=True, add_completion=False)
console = Console()
err_console = Console(stderr=True)


@app.command("list")
def list_cmd(
    level: int = typer.Option(None, "--level", help="1, 2 or 3"),
    domain: str = typer.Option(None, "--domain", help="mobile | robotics | aiot"),
    backend: str = typer.Option(None, "--backend", help="the tasks of this backend's domain (llvm: mobile, ...)"),
    family: str = typer.Option(None, "--family", help="provenance family, any part of it: resnet, mobilenet, llama ..."),
    as_json: bool = typer.Option(False, "--json", help="print a JSON list"),
    counts_only: bool = typer.Option(False, "--counts", help="only the table of tasks and instances per level and backend"),
) -> None:
    """List the suite's tasks, then their count per level and their instances per backend."""
    from benchmark.task import DOMAINS, counts, select
    from leka.backends import backend_names

    if domain is not None and domain not in DOMAINS:
        raise UserError(f"unknown domain {domain!r}; use one of {', '.join(DOMAINS)}")
    if level is not None and level not in (1, 2, 3):
        raise UserError(f"unknown level {level}; use 1, 2 or 3")
    if backend is not None and backend not in backend_names():
        raise UserError(f"unknown backend {backend!r}; use one of {', '.join(backend_names())}")
    tasks = select(level=level, domain=domain, backend=backend, family=family)
    if family and not tasks:
        raise UserError(f"no task of the family {family!r}" + (" with those filters" if level or domain or backend else ""))
    if as_json:
        print(json.dumps([t.summary() for t in tasks], indent=1))
        return
    if not counts_only:
        tab = Table(title=f"{len(tasks)} tasks")
        for col in ("id", "level", "domains", "family", "description"):
            tab.add_column(col)
        for t in tasks:
            tab.add_row(t.id, str(t.level), ",".join(t.domains), t.family, t.description[:60])
        console.print(tab)
    console.print(counts_table(counts(tasks, backend_names())))


def counts_table(per_level: dict[int, dict[str, int]]) -> Table:
    """Tasks per level and (task, backend) instances: a task is an instance on each backend whose
    domain it lists (llvm: mobile, cuda: robotics, opencl: aiot)."""
    from leka.backends import get_backend

    cols = [k for k in next(iter(per_level.values()), {"tasks": 0}) if k != "tasks"]
    tab = Table(title="tasks and instances per level and backend")
    tab.add_column("level")
    tab.add_column("tasks", justify="right")
    for b in cols:
        tab.add_column(f"{b} ({get_backend(b).domain})", justify="right")
    for lv, row in per_level.items():
        tab.add_row(f"Level {lv}", str(row["tasks"]), *(str(row[b]) for b in cols))
    tab.add_row("all", str(sum(r["tasks"] for r in per_level.values())),
                *(str(sum(r[b] for r in per_level.values())) for b in cols), style="bold")
    return tab


def _check_backend(backend: str, device_url: str = "local") -> None:
    from leka.backends import require_runnable

    require_runnable(backend, device_url)


def _load_line(m: dict | None) -> str | None:
    if not m:
        return None
    return (f"{'LOADED' if m['loaded'] else 'quiet'}: other processes {m['other_cpu_s']:.2f} s CPU, steal "
            f"{m['steal_s']:.2f} s in {m['wall_s']:.2f} s of timing")


def _floor_line(f: dict | None) -> str | None:
    """The task's SOL time on this machine against the judged time (benchmark/judge/floor.py)."""
    from profilers.roof import fmt_fraction

    if not f:
        return None
    if "unavailable" in f:
        return f"unavailable: {f['unavailable']}"
    return (f"SOL {f['sol_s'] * 1e6:.3f} us ({f['level']}; x slack {f['slack']:g}), judged "
            f"{f['t_candidate_s'] * 1e6:.3f} us: {fmt_fraction(f.get('fraction'))} of the roof")


def result_table(res) -> Table:
    from benchmark.judge import fmt_interval, platform_line

    tab = Table(title=f"{res.task} on {res.backend}")
    tab.add_column("metric")
    tab.add_column("value")
    rows = [
        ("compiled", res.compiled), ("correct", res.correct), ("error_kind", res.error_kind),
        ("error", (res.error or "")[:160]), ("baseline", res.extra.get("baseline_name") or res.baseline),
        ("speedup [interval]", fmt_interval(res.speedup, res.speedup_lo, res.speedup_hi) if res.speedup else None),
        ("faster (lower bound > 1)", res.is_faster(1.0) if res.speedup else None),
        ("t_candidate", f"{res.t_candidate_s * 1e3:.3f} ms" if res.t_candidate_s else None),
        ("t_baseline", f"{res.t_baseline_s * 1e3:.3f} ms" if res.t_baseline_s else None),
        ("timing valid (spread)", f"{res.timing_valid} ({res.timing_spread:.3f}, {res.n_pairs} pairs)"
         if res.timing_spread is not None else None),
        ("machine load", _load_line(res.extra.get("machine_load"))),
        ("platform", platform_line(res.extra["platform"]) if res.extra.get("platform") else None),
        ("physical floor", _floor_line(res.extra.get("floor"))),
        ("audit", "; ".join(res.extra["audit"]) if res.extra.get("audit") else None),
        ("max abs err", f"{res.max_abs_err:.3g}" if res.max_abs_err is not None else None),
        ("peak memory", f"{res.peak_memory_bytes / 2**20:.2f} MiB" if res.peak_memory_bytes else None),
        ("peak RSS", f"{res.peak_rss_bytes / 2**20:.0f} MiB" if res.peak_rss_bytes else None),
        ("build / check / timing", " / ".join(f"{x:.2f}s" if x is not None else "-" for x in
                                             (res.build_s, res.check_s, res.timing_s))),
    ]
    for k, v in rows:
        if v is not None and v != "":
            tab.add_row(k, str(v))
    return tab


@app.command("eval")
def eval_cmd(
    task: str = typer.Argument(..., help="a task id, or the path of any KernelBench-format file"),
    candidate: Path = typer.Option(None, "--candidate", help="a candidate folder (relax.py, l1/, l2/: "
                                   "leka/ir/files.py), a run folder (its best node), RUN_DIR/nodes/N, a "
                                   "candidate JSON, or lifted-params TVMScript (L0)"),
    backend: str = backend_option(),
    baseline: str = typer.Option("untuned", "--baseline", help="untuned | tuned | torch | torch_compile | ort | mnn "
                                 "(CPU); torch_compile_cg | tensorrt (CUDA); the backend's table says which"),
    trials: int = typer.Option(64, "--trials", help="MetaSchedule trials for --baseline tuned"),
    json_out: Path = typer.Option(None, "--json", help="write the result as JSON here"),
    timeout: float = typer.Option(None, "--timeout", help="seconds before the evaluation is killed"),
    config: list[str] = typer.Option([], "--set", help="config override key=value (repeatable)"),
    config_files: list[str] = typer.Option([], "--config", help="YAML overlay (repeatable), e.g. a run's config.yaml"),
) -> None:
    """Evaluate the default lowering (or --candidate FILE) of TASK: correctness over 3 seeds, paired
    timing against the baseline, memory. Exit 0 = correct, 1 = the candidate failed, 2 = bad input."""
    from benchmark import baselines
    from benchmark.judge import Evaluator
    from benchmark.task import resolve
    from leka.core.config import load_config
    from leka.core.types import EvalResult
    from leka.ir.files import CandidateFilesError, load_candidate

    refused = baselines.refusal(baseline, backend)  # the backend's record says which kinds it takes
    if refused:
        raise UserError(refused)
    if candidate is not None and not candidate.exists():
        raise UserError(f"candidate {candidate} not found")
    cfg = load_config(config_files, config)
    _check_backend(backend, cfg.device.url)
    if timeout:
        cfg.evaluator.timeout_s = timeout
    t = resolve(task)
    if baseline == "tuned":
        with console.status(f"MetaSchedule baseline for {t.id} ({trials} trials; cached after the first run)"):
            d, reused = baselines.ensure_tuned(t, backend, trials, cfg.baseline.cache_dir, device=cfg.device)
        err_console.print(f"tuned baseline {'reused from' if reused else 'tuned into'} {d}")
    ev = Evaluator(cfg.evaluator, backend, cfg.baseline.model_copy(update={"kind": baseline, "trials": trials}),
                   device=cfg.device)
    try:
        cand = (load_candidate(t, candidate, backend, workdir=Path(cfg.baseline.cache_dir) / "candidates")
                if candidate else None)
    except CandidateFilesError as e:  # an illegal decision is the candidate's failure, not bad input
        cand, res = None, EvalResult(task=t.id, backend=backend, baseline=baseline, error_kind="compile",
                                     error=str(e))
    if cand is not None or candidate is None:
        with console.status(f"evaluating {t.id} ..."):
            res = ev.evaluate(t, cand)
    if res.error_kind in ("import", "bad_input"):
        if json_out:
            json_out.write_text(res.model_dump_json(indent=1))
        raise UserError(f"{t.id}: {res.error}")
    console.print(result_table(res))
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(res.model_dump_json(indent=1))
    if not res.correct:
        sys.exit(1)


@app.command("baseline")
def baseline_cmd(
    subset: str = typer.Option(None, "--subset", help="e.g. subset69"),
    task: list[str] = typer.Option([], "--task", help="task id or path (repeatable), instead of --subset"),
    every: bool = typer.Option(False, "--all", help="every suite instance (of --level) for the backend"),
    level: list[int] = typer.Option([], "--level", help="with --all: these levels only (repeatable)"),
    limit_per_level: int = typer.Option(None, "--limit-per-level", help="with --all: the first N of each level "
                                        "(the instances `leka bench oneshot --limit-per-level N` takes)"),
    background: bool = typer.Option(False, "--background", help="detach: tune in a process of its own, logging "
                                    "to CACHE_DIR/baseline-BACKEND-TRIALS.log; run again to resume (tuned ones are reused)"),
    backend: str = backend_option(),
    trials: int = typer.Option(64, "--trials"),
    cache_dir: str = typer.Option(".leka-cache", "--cache-dir"),
    device: str = typer.Option(None, "--device", help="local | rpc://HOST:PORT/KEY: tune on a board behind "
                               "the TVM RPC tracker (its target and cross compiler from --config / --set device.*)"),
    config: list[str] = typer.Option([], "--set", help="config override key=value (repeatable)"),
    config_files: list[str] = typer.Option([], "--config", help="YAML overlay (repeatable), e.g. board.yaml"),
) -> None:
    """Tune the MetaSchedule baseline of each task once and cache its JSON database; later runs reuse it.
    On a board (`--device rpc://...`, docs/boards.md) MetaSchedule's trials run there."""
    from benchmark import baselines
    from benchmark.task import resolve
    from leka.core.config import load_config
    from leka.core.devices import parse_device

    if device:
        parse_device(device)
        config = [*config, f"device.url='{device}'"]
    dev = load_config(config_files, config).device
    _check_backend(backend, dev.url)
    if trials < 1:
        raise UserError("--trials must be >= 1")
    if not subset and not task and not every:
        raise UserError("give --subset NAME, --task ID or --all")
    if background:
        _detach(backend, trials, cache_dir)
        return
    ids = _baseline_ids(backend, task, subset, every, level, limit_per_level)
    tab = Table(title=f"MetaSchedule baselines ({trials} trials, {backend}"
                + (f", {dev.url})" if dev.url not in ("", "local") else ")"))
    for col in ("task", "status", "seconds", "database"):
        tab.add_column(col)
    for i, tid in enumerate(ids, 1):
        t = resolve(tid)
        t0 = time.time()
        with console.status(f"[{i}/{len(ids)}] tuning {t.id} ..."):
            try:
                d, reused = baselines.ensure_tuned(t, backend, trials, cache_dir, device=dev)
            except Exception as e:  # noqa: BLE001 - one task's failure must not stop the batch
                tab.add_row(t.id, f"failed: {type(e).__name__}: {str(e).splitlines()[0][:80]}", "-", "-")
                continue
        tab.add_row(t.id, "reused (cache)" if reused else "tuned", f"{time.time() - t0:.1f}", str(d))
    console.print(tab)


def _baseline_ids(backend: str, task: list[str], subset: str | None, every: bool, level: list[int],
                  limit_per_level: int | None) -> list[str]:
    """The tasks `leka bench baseline` tunes: --task ids, a subset's part for the backend, and with --all
    the suite (of --level; the first --limit-per-level of each level, as `leka bench oneshot` takes them)."""
    ids: list[str] = list(task)
    if subset:
        from benchmark.subsets import load_subset

        ids += load_subset(subset, backend)
    if every:
        from benchmark.task import select

        per: dict[int, int] = {}
        for t in select():
            if (not level or t.level in level) and (limit_per_level is None or per.get(t.level, 0) < limit_per_level):
                ids.append(t.id)
                per[t.level] = per.get(t.level, 0) + 1
    return list(dict.fromkeys(ids))


def _detach(backend: str, trials: int, cache_dir: str) -> None:
    """This same command without --background, in a new session (it outlives the shell), its output in a
    log; each task's database is cached as it finishes, so a killed run resumes where it stopped."""
    import subprocess

    argv = [a for a in sys.argv[1:] if a != "--background"]
    log = Path(cache_dir) / f"baseline-{backend}-{trials}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as f:
        p = subprocess.Popen([sys.executable, "-m", "leka.cli", *argv], stdout=f, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
    console.print(f"tuning in the background: pid {p.pid}, log {log}; run the same command again to resume")


def roof_rows(p) -> list[tuple[str, ...]]:
    """The roof as rows (what `bench roof` prints, as a table or markdown)."""
    def gb(x: float | None) -> str:
        return "-" if x is None else f"{x:.1f}"

    def cap(n: int) -> str:
        return "-" if not n else f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"

    rows = [(f"FMA {p.dtype}", "-", f"{p.gflops:.1f} GFLOP/s", "-", "-", "-")]
    for lv in p.levels:
        rows.append((lv.name, cap(lv.capacity), f"{lv.gbps:.1f} GB/s", gb(lv.read_gbps), gb(lv.copy_gbps),
                     gb(lv.triad_gbps)))
    if not p.levels:
        rows.append(("DRAM", "-", f"{p.gbps:.1f} GB/s", "-", "-", "-"))
    return rows


def roof_title(p) -> str:
    where = f"{p.threads} threads, " if p.device == "cpu" else ""
    took = f" ({p.seconds:.1f} s to measure)" if p.seconds else ""
    when = f", {p.measured_at}" if p.measured_at else ""
    fma = p.fma or {}
    how = (f"; FMA: {fma['chains']} independent chains x {fma['lanes']} lanes ({fma['vector_bits']}-bit) a thread"
           if {"chains", "lanes", "vector_bits"} <= fma.keys() else "")
    return (f"{p.model or p.cpu}: {where}{p.dtype}; {p.source}{took}{when}; key {p.cpu}; "
            f"ridge {p.ridge:.1f} FLOP/byte (DRAM){how}")


ROOF_COLUMNS = ("level", "capacity (all threads)", "roof", "read GB/s", "copy GB/s", "triad GB/s")


@app.command("roof")
def roof_cmd(
    backend: str = backend_option(),
    refresh: bool = typer.Option(False, "--refresh", help="measure again (else: the cached roof of this machine)"),
    dtype: str = typer.Option("float32", "--dtype", help="float32 | float64 | float16 (CPU: where the ISA has "
                              "packed fp16 FMAs); GPU: float32 | float16"),
    threads: int = typer.Option(None, "--threads", help="CPU threads (default: the CPU's affinity set, as TVM)"),
    budget: float = typer.Option(6.0, "--budget", help="seconds of measurement (CPU), split over FMA and the levels"),
    max_mib: int = typer.Option(None, "--max-mib", help="cap each level's working set (MiB): a quick look only, "
                                "the levels past the cap then measure a smaller one"),
    markdown: bool = typer.Option(False, "--markdown", help="print a markdown table"),
    as_json: bool = typer.Option(False, "--json", help="print the roof as JSON"),
) -> None:
    """This machine's roof: peak FMA throughput at the thread count and dtype, streaming bandwidth
    (read / copy / triad) per cache level and DRAM; measured once (under 20 s) and cached per machine
    key (CPU model, thread count, dtype). On a GPU backend: torch matmul and device copies, on that
    GPU. Profiles, reports and the router read the cached roof. Time it on a quiet machine."""
    from leka.backends import get_backend
    from profilers import calibrate
    from profilers.roof_bench import CPU_DTYPES, GPU_DTYPES, RoofBenchUnavailable

    spec = get_backend(backend)
    gpu = bool(spec.peaks)
    if dtype not in (GPU_DTYPES if gpu else CPU_DTYPES):
        raise UserError(f"dtype {dtype!r}: use one of {', '.join(GPU_DTYPES if gpu else CPU_DTYPES)}")
    if threads is not None and threads < 1:
        raise UserError("--threads must be >= 1")
    if budget <= 0 or (max_mib is not None and max_mib < 1):
        raise UserError("--budget must be > 0 and --max-mib >= 1")
    try:
        if gpu:
            if not spec.roof_device:
                raise UserError(f"the {backend} roof is not measured here (no device kernels for it): "
                                "profiles use its datasheet table")
            _check_backend(backend)
            p = calibrate.peaks(backend, dtype=dtype)
            if refresh or p.source == "table":
                with console.status(f"measuring the {backend} roof ({dtype}) ..."):
                    p = calibrate.refresh_gpu(backend, dtype=dtype)
        else:
            with console.status("measuring this machine's roof (FMA, L1 .. DRAM) ..."):
                p = calibrate.peaks(None, refresh=refresh, dtype=dtype, threads=threads, budget_s=budget,
                                    max_bytes=max_mib * 2**20 if max_mib else None)
    except RoofBenchUnavailable as e:
        raise UserError(f"the roof cannot be measured here: {e}") from e
    if as_json:
        print(p.model_dump_json(indent=1))
    else:
        print_roof(p, markdown)


def print_roof(p, markdown: bool = False) -> None:
    head, rows = roof_title(p), roof_rows(p)
    if markdown:
        print(head + "\n")
        print("| " + " | ".join(ROOF_COLUMNS) + " |")
        print("|" + "---|" * len(ROOF_COLUMNS))
        for r in rows:
            print("| " + " | ".join(r) + " |")
        return
    tab = Table(title=head)
    for col in ROOF_COLUMNS:
        tab.add_column(col)
    for r in rows:
        tab.add_row(*r)
    console.print(tab)
