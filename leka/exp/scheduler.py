"""`leka exp run`: prepare the baselines, then run every job of the grid on Ray, recording each row
in EXP_DIR/results.sqlite as it ends; `--resume` continues a killed grid. Where Ray is not installed,
`--workers 1` runs the jobs one at a time, each in a child process (`_drive_serial`).

Ray: by default a local Ray on 127.0.0.1 sized to `--workers` (no dashboard, no usage stats, a small
object store); `--address HOST:PORT` joins a cluster instead (every node must have this project
installed and EXP_DIR on a shared file system). A job declares its backend's resources: 1 CPU for
llvm, 1 GPU for cuda, the custom resource `device:<key>` for an OpenCL board (a node with a board
starts with `ray start --resources '{"device:opencl-board": 1}'`; the local Ray offers one slot of each
device its grid's jobs hold, this host's OpenCL platform (PoCL), so they take it in turn, and the
GPUs Ray detects when the grid has cuda jobs).

Ray sets OMP_NUM_THREADS to a job's CPU count, so TVM and PyTorch measure with that many threads:
give llvm jobs every core of a measuring slot (`resources: {llvm: {CPU: 2}}` on this 2-core machine).

A job holds its Ray resources for its whole run, LLM waits included. For policy=llm arms, give jobs a
small share and let their evaluations queue for the machine's measuring slots instead
(benchmark/judge/slots.py): `resources: {llvm: {CPU: 0.5}}` and `measure_slots: {llvm: 1}` runs four LLM jobs
on two cores with `--workers 4`, each evaluation alone on the machine; the wait for a slot is not
charged to the job's budget. (The time-matched MetaSchedule arm tunes outside the slots: run it in a
grid of its own, or with `--workers` no more than the slots.)
"""

from __future__ import annotations

import logging
import math
import os
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from leka.backends import get_backend
from leka.core.types import UserError
from leka.exp import config as C
from leka.exp.judge import execute, read_result
from leka.exp.store import Store

console = Console()


def resources_for(backend: str, cfg: C.ExpConfig) -> dict[str, float]:
    """The Ray resources of one job: the config's, else the backend record's defaults; a backend that
    holds a device (a board) also takes one `device:<key>` unless the config names its own."""
    b = get_backend(backend)
    r = dict(cfg.resources.get(backend) or b.resources)
    if b.holds_device and not any(k.startswith("device:") for k in r):
        r[f"device:{cfg.opencl_device_key}"] = 1.0
    return r


def _options(res: dict[str, float]) -> dict[str, Any]:
    r = dict(res)
    return {"num_cpus": r.pop("CPU", 0.0), "num_gpus": r.pop("GPU", 0.0), "resources": r, "max_retries": 0}


def local_devices(jobs: list[C.Job], cfg: C.ExpConfig) -> dict[str, float]:
    """The device resources a local Ray node offers: one slot of each device the grid's jobs hold (the
    OpenCL platform of this host, PoCL or a board behind its tracker), so their jobs take it in turn.
    A cluster (--address) declares its own boards with `ray start --resources`."""
    out: dict[str, float] = {}
    for b in sorted({j.backend for j in jobs}):
        for k in resources_for(b, cfg):
            if k.startswith("device:"):
                out[k] = 1.0
    return out


def init_ray(address: str | None, workers: int, cpus_per_job: float = 1.0,
             devices: dict[str, float] | None = None, gpus: bool = False) -> None:
    """`devices`: the custom resources a local node offers (local_devices); `gpus`: a local node offers
    the GPUs Ray detects (a grid with cuda jobs), else none, so CPU jobs never see one."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # never phone home
    if not address:  # Ray's own switch for a loopback-only node (else it binds the host's outward IP)
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    # Ray runs workers at nice 15; a job measures, and at nice 15 anything else on the machine takes its core
    os.environ.setdefault("RAY_worker_niceness", "0")
    os.environ.setdefault("RAY_DISABLE_IMPORT_WARNING", "1")
    if ray.is_initialized():
        return
    # Ray turns token auth on for a new local cluster and says so on stderr each time: keep it on, quietly
    logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
    if address:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
        return
    ray.init(num_cpus=max(1, math.ceil(workers * cpus_per_job)), num_gpus=None if gpus else 0, include_dashboard=False,
             log_to_driver=False,
             object_store_memory=80 * 2**20, _node_ip_address="127.0.0.1", resources=dict(devices or {}),
             _system_config={"metrics_report_interval_ms": 0}, configure_logging=False)


def _job_fn():
    import ray

    @ray.remote
    def run_job(job: dict, cfg: dict, exp_dir: str, attempt: int) -> dict:
        return _run_job_alone(job, cfg, exp_dir, attempt)  # Ray sets the worker's OMP_NUM_THREADS itself

    return run_job


def ray_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("ray") is not None


def _run_job_alone(job: dict, cfg: dict, exp_dir: str, attempt: int, cpus: float = 0.0) -> dict:
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning)
    if cpus > 0:  # what a Ray worker of that many CPUs would see
        os.environ["OMP_NUM_THREADS"] = str(max(1, int(cpus)))
    return execute(C.Job.model_validate(job), C.ExpConfig.model_validate(cfg), Path(exp_dir), attempt)


def _after_death(store: Store, exp_dir: Path, cfg: C.ExpConfig, item: tuple, e: BaseException,
                 queue: list) -> dict | None:
    """A job whose worker died: the row it wrote before dying, else None and the job queued again (once
    per attempt left), else a `worker_died` row."""
    jid, attempt, spec = item
    row = read_result(exp_dir, C.Job.model_validate(spec), attempt)
    if row is None and attempt < cfg.max_attempts:
        store.requeue(jid, f"worker died: {type(e).__name__}")
        queue.append(item)
        return None
    return row or {**spec, "attempt": attempt, "correct": False, "compiled": False,
                   "error_kind": "worker_died", "error": f"{type(e).__name__}: {str(e)[:300]}"}


def _drive_serial(store: Store, exp_dir: Path, cfg: C.ExpConfig, pending: list) -> None:
    """The grid without Ray (a machine without it, such as the GPU host of experiments/gpu): one job at
    a time, each in a fresh child process, so a crash or a leak ends there; a child that dies is retried
    once as on Ray."""
    import concurrent.futures as cf
    import multiprocessing as mp

    cfg_dict = cfg.model_dump(mode="json")
    queue = list(pending)
    while queue:
        jid, _, spec = queue.pop(0)
        attempt = store.start(jid)
        cpus = resources_for(spec["backend"], cfg).get("CPU", 0.0)
        with cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
            try:
                row = pool.submit(_run_job_alone, spec, cfg_dict, str(exp_dir), attempt, cpus).result()
            except Exception as e:  # noqa: BLE001 - the child died (killed, OOM): retry once
                row = _after_death(store, exp_dir, cfg, (jid, attempt, spec), e, queue)
                if row is None:
                    continue
        store.finish(jid, attempt, row)
        st = "ok" if row.get("correct") else f"failed ({row.get('error_kind')})"
        console.print(f"  done {jid} [{st}] in {row.get('wall_s', 0):.0f}s")


def _check_feasible(jobs: list[C.Job], cfg: C.ExpConfig) -> None:
    import ray

    have = ray.cluster_resources()
    for b in sorted({j.backend for j in jobs}):
        for k, v in resources_for(b, cfg).items():
            if v > 0 and have.get(k, 0) < v:
                raise UserError(f"backend {b}: no Ray node offers resource {k}={v:g} (cluster has "
                                f"{ {k2: v2 for k2, v2 in have.items() if '_group_' not in k2 and 'node:' not in k2} }); "
                                "join a cluster that has it with --address")


_STOPPED_BY: list[int] = []  # the signal that stopped this driver (stop_on_signals)


def _exit_on(signum, _frame) -> None:
    _STOPPED_BY.append(signum)
    raise SystemExit(128 + signum)


def stop_on_signals() -> None:
    """A SIGTERM or SIGHUP (a `timeout`, a batch system, a closed terminal) stops the driver as Ctrl-C
    does: the store is closed and Ray's exit handler shuts its local node down; the grid goes on with
    --resume. Installed after `ray.init`, whose own handler aborts the driver (exit 134) and left Ray's
    agents running for minutes."""
    import signal

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on)


def prepare_baselines(cfg: C.ExpConfig, jobs: list[C.Job], *, tune: bool = True) -> dict[str, str]:
    """Tune the MetaSchedule baseline of every task the grid measures (cached, shared by its jobs),
    before any job starts. Returns {task: error} for tasks that could not be prepared (their jobs
    will fail with that error)."""
    from benchmark import baselines
    from benchmark.task import resolve

    need: dict[tuple[str, str], Any] = {}
    problems: dict[str, str] = {}
    if not cfg.baseline.tuned_trials:
        return problems  # the reference is untuned TVM: nothing to prepare
    for j in jobs:
        if (j.backend, j.task) in need or j.task in problems:
            continue
        try:
            t = resolve(j.task)
        except Exception as e:  # noqa: BLE001 - a broken task file becomes failed rows, not a stop
            problems[j.task] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            continue
        if not baselines.is_tuned(baselines.ms_dir(t, j.backend, cfg.baseline.tuned_trials, cfg.baseline.cache_dir)):
            need[(j.backend, j.task)] = t
    if need and cfg.baseline.prepare == "refuse":
        first = next(iter(need.values()))
        raise UserError(f"no cached MetaSchedule database ({cfg.baseline.tuned_trials} trials) for {len(need)} "
                        f"task(s), e.g. {first.id}; run `leka bench baseline --trials {cfg.baseline.tuned_trials}` "
                        "or set baseline.prepare: tune")
    for i, ((backend, _), t) in enumerate(need.items() if tune and cfg.baseline.prepare == "tune" else (), 1):
        with console.status(f"baseline {i}/{len(need)}: tuning {t.id} on {backend} "
                            f"({cfg.baseline.tuned_trials} trials, cached) ..."):
            t0 = time.time()
            try:
                baselines.ensure_tuned(t, backend, cfg.baseline.tuned_trials, cfg.baseline.cache_dir)
                console.print(f"  tuned baseline of {t.id} ({backend}) in {time.time() - t0:.0f} s")
            except Exception as e:  # noqa: BLE001 - recorded; that task's jobs report it
                problems[t.id] = f"baseline tuning failed: {type(e).__name__}: {str(e)[:200]}"
                console.print(f"  [red]baseline of {t.id} failed[/]: {problems[t.id]}")
    if tune:
        measure_roofs(jobs)
    return problems


def measure_roofs(jobs: list[C.Job]) -> None:
    """The CPU roof (`leka bench roof`, cached per machine) measured once here, after the tuning and before
    any job, when nothing else runs: measured inside the first job's profile instead, it would read the
    peaks while the other jobs build and time."""
    from leka.backends import get_backend
    from profilers.calibrate import peaks

    if any(not get_backend(j.backend).gpu and not get_backend(j.backend).peaks for j in jobs):
        try:
            with console.status("the machine's roof (leka bench roof; cached) ..."):
                p = peaks()
            console.print(f"  roof: {p.gflops:.0f} GFLOP/s {p.dtype} at {p.threads} threads, DRAM {p.gbps:.0f} GB/s "
                          f"({p.source})")
        except Exception as e:  # noqa: BLE001 - without a roof the reports leave its columns empty
            console.print(f"  [yellow]no roof measured[/]: {type(e).__name__}: {str(e)[:200]}")


class Progress:
    def __init__(self, store: Store, workers: int, total: int):
        self.store, self.workers, self.total = store, workers, total
        self.t0 = time.time()

    def table(self, inflight: dict[Any, tuple[str, int, dict, float]]) -> Table:
        c = self.store.counts()
        # each job's budget scaled by what finished jobs took per second of budget (1 until one finishes)
        ratio = self.store.time_per_budget() or 1.0
        now = time.time()
        work = ratio * sum(s["budget_s"] for _, _, s in self.store.by_state("pending"))
        work += sum(max(0.0, ratio * s["budget_s"] - (now - t0)) for _, _, s, t0 in inflight.values())
        eta = work / max(1, self.workers)
        t = Table(title=f"grid: {c.get('done', 0)}/{self.total} done ({c.get('failed', 0)} failed), "
                        f"{len(inflight)} running, {c.get('pending', 0)} pending, ETA {eta / 60:.1f} min")
        for col in ("running job", "attempt", "elapsed", "budget"):
            t.add_column(col)
        for jid, attempt, spec, t_start in inflight.values():
            t.add_row(jid, str(attempt), f"{now - t_start:.0f}s", f"{spec['budget_s']:.0f}s")
        return t


def run_grid(exp_dir: Path, cfg: C.ExpConfig, jobs: list[C.Job], *, address: str | None, workers: int,
             live: bool | None = None) -> dict[str, int]:

    store = Store(exp_dir)
    try:
        store.add_jobs(jobs)
        for jid, attempt, spec in store.by_state("running"):  # left by a killed driver
            row = read_result(exp_dir, C.Job.model_validate(spec), attempt)
            if row is not None:
                store.finish(jid, attempt, row)
            else:
                store.requeue(jid, "the driver stopped while it ran")
        pending = store.by_state("pending")
        if not pending:
            return store.counts()
        todo = [C.Job.model_validate(s) for _, _, s in pending]
        prepare_baselines(cfg, todo, tune=False)  # refuses (baseline.prepare: refuse) before Ray starts
        serial = not ray_installed()
        if serial:
            if address or workers > 1:
                raise UserError("Ray is not installed (pip install 'ray[default]'): without it a grid runs "
                                "one job at a time, with --workers 1 and no --address")
            console.print("[yellow]Ray is not installed: the grid's jobs run one at a time, each in a child "
                          "process[/]")
        else:
            init_ray(address, workers, max(resources_for(j.backend, cfg).get("CPU", 0.0) for j in todo),
                     local_devices(todo, cfg),
                     gpus=any(resources_for(j.backend, cfg).get("GPU", 0.0) > 0 for j in todo))
            stop_on_signals()
            _check_feasible(todo, cfg)
        problems = prepare_baselines(cfg, todo)
        if problems:
            console.print(f"[yellow]{len(problems)} task(s) cannot be measured; their jobs become failed rows[/]")
        if serial:
            _drive_serial(store, exp_dir, cfg, pending)
        else:
            _drive(store, exp_dir, cfg, pending, workers, live)
        return store.counts()
    except SystemExit:
        if _STOPPED_BY:  # Ray's wait turns the handler's exit into SystemExit(1): the signal's code instead
            raise SystemExit(128 + _STOPPED_BY[-1]) from None
        raise
    finally:
        store.close()


def _drive(store: Store, exp_dir: Path, cfg: C.ExpConfig, pending: list, workers: int, live: bool | None) -> None:
    import ray

    run_job = _job_fn()
    cfg_dict = cfg.model_dump(mode="json")
    inflight: dict[Any, tuple[str, int, dict, float]] = {}
    prog = Progress(store, workers, len(store.conn.execute("SELECT job_id FROM jobs").fetchall()))
    use_live = console.is_terminal if live is None else live
    lv = Live(prog.table(inflight), console=console, refresh_per_second=1) if use_live else None
    if lv:
        lv.start()
    last_print = 0.0
    try:
        while pending or inflight:
            while pending and len(inflight) < workers:
                jid, _, spec = pending.pop(0)
                attempt = store.start(jid)
                res = resources_for(spec["backend"], cfg)
                ref = run_job.options(**_options(res)).remote(spec, cfg_dict, str(exp_dir), attempt)
                inflight[ref] = (jid, attempt, spec, time.time())
            done, _ = ray.wait(list(inflight), num_returns=1, timeout=1.0)
            for ref in done:
                jid, attempt, spec, _ = inflight.pop(ref)
                try:
                    row = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - the worker died (killed, OOM): retry once
                    row = _after_death(store, exp_dir, cfg, (jid, attempt, spec), e, pending)
                    if row is None:
                        continue
                store.finish(jid, attempt, row)
                if not use_live:
                    st = "ok" if row.get("correct") else f"failed ({row.get('error_kind')})"
                    console.print(f"  done {jid} [{st}] in {row.get('wall_s', 0):.0f}s")
            if lv:
                lv.update(prog.table(inflight))
            elif time.time() - last_print > 60:
                last_print = time.time()
                console.print(prog.table(inflight).title)
    finally:
        if lv:
            lv.stop()
