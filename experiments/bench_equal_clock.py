"""Issue 30: LEKA and MetaSchedule given the same wall clock per task, judged against each other.

    python experiments/bench_equal_clock.py run    --backend B --out DIR [--budget 5m] [--arm leka]
                                                   [--jobs 1] [--tasks a,b] [--minutes M] [--set k=v]
    python experiments/bench_equal_clock.py judge  --out DIR [--jobs 1] [--set k=v]
    python experiments/bench_equal_clock.py render --out DIR [--md FILE]

`run`, per subset69 task of the backend: one `leka run --policy rules --budget B` (bench_vs_engines'
`one_run`; `--arm leka` is the paper's setting, `leka_ms` the MetaSchedule tool on), then MetaSchedule
alone for the same wall clock (`--ms-clock leka`, the default: the wall clock LEKA's run of that task took,
at least B; `budget`: B): one process that tunes every kernel of the task's unscheduled lowering
(`tvm_adapter.tune_relax`, the tuned baseline's own tuner, with more trials than it can reach), killed
when the clock is up. Its clock starts when its tuning does (imports and task extraction free), which
favours it: LEKA's budget includes its root's import and first evaluation. The parent counts the complete lines of the database's tuning records at every minute: the database cut at
minute m is MetaSchedule's answer at m (its records are appended as the trials are measured).

`judge`: LEKA's answer evaluated (`Evaluator.evaluate`: checked over the seeds, then interleaved pairs,
the speedup's interval) against the `tuned` baseline built from each cut database, the last cut being
MetaSchedule's answer at B. A win is an interval above 1. The anytime table puts both curves on one
scale, LEKA's final answer: LEKA at minute m = its best in-run speedup then / its last (its own timings
against the run baseline), MetaSchedule at m = 1 / (LEKA's answer vs the cut at m).

Resumable like bench_vs_engines (DIR/runs.jsonl, DIR/tunes.jsonl, DIR/judged.jsonl, one JSON line per
finished item; `--minutes` starts nothing new after M minutes). On a CPU keep `--jobs 1`; on a GPU
several tasks at once, as experiments/gpu does (LEKA's checks and timings queue for the GPU lock;
MetaSchedule's runner measures its trials as it always does).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from experiments.bench_vs_engines import (  # noqa: E402
    ARM_TEXT,
    _drain,
    dispatch,
    grid_parser,
    latest,
    machine,
    one_run,
    read_rows,
    versions,
)

# the trial count the clock-bounded databases are filed under (baselines.ms_dir keys on it): never reached
CLOCK_TRIALS = 1_000_000
RECORDS = "database_tuning_record.json"
READY_S = 900.0  # a tuning process that has not started tuning after this long has failed
WORKLOADS = "database_workload.json"


# ----------------------------------------------------------------------------- MetaSchedule on the clock
def complete_lines(path: Path) -> int:
    """Complete lines of a JSON-lines file (a line cut by the kill does not count)."""
    if not path.is_file():
        return 0
    n = 0
    for ln in path.read_bytes().split(b"\n")[:-1]:
        try:
            json.loads(ln)
            n += 1
        except ValueError:
            break
    return n


def cut_database(src: Path, dst: Path, n_records: int, tasks: int, meta: dict[str, Any]) -> Path:
    """The database of `src` as it stood after its first `n_records` records, in `dst`, with the DONE
    file `baselines.is_tuned` asks for."""
    dst.mkdir(parents=True, exist_ok=True)
    work = [ln for ln in (src / WORKLOADS).read_bytes().split(b"\n") if ln.strip()] if (src / WORKLOADS).is_file() else []
    recs = (src / RECORDS).read_bytes().split(b"\n")[:n_records] if n_records else []
    (dst / WORKLOADS).write_bytes(b"".join(w + b"\n" for w in work))
    (dst / RECORDS).write_bytes(b"".join(r + b"\n" for r in recs))
    (dst / "DONE").write_text(json.dumps({"trials": CLOCK_TRIALS, "tasks": tasks, "records": n_records, **meta}))
    return dst


def _tune_child(task_id: str, backend: str, work: str, cache_dir: str) -> None:
    """In the killed process: the task tuned without end; its tuning tasks' count is written when the tuning
    starts (the parent's clock starts then)."""
    from benchmark import baselines
    from benchmark.roots import load_root
    from benchmark.task import resolve
    from leka import tvm_adapter as A

    task = resolve(task_id)
    root = load_root(task, cache_dir)
    target = baselines.tuning_target(backend)
    lowered = baselines.ms_input(task, backend, root, target)
    A.tune_relax(lowered, target, work, CLOCK_TRIALS, on_start=lambda n: (Path(work) / "tasks.json").write_text(
        json.dumps({"tasks": n, "t": time.time()})))


def _share_roots(cache: Path, cache_dir: str) -> None:
    """A cut's cache folder sees the shared cache's imported roots (an import takes seconds to minutes)."""
    from benchmark.roots import cache_root

    shared = (cache_root(cache_dir) / "roots").resolve()
    shared.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / "roots").exists():
        (cache / "roots").symlink_to(shared, target_is_directory=True)


def one_tune(backend: str, tid: str, out: Path, budget_s: float, cache_dir: str) -> dict:
    """MetaSchedule for `budget_s` of wall clock on one task; the database cut at every minute and at
    the end (out/ms/TASK/mK, K = minutes, the last one `end`)."""
    from benchmark import baselines
    from benchmark.task import resolve

    task = resolve(tid)
    work = out / "ms" / task.id / "db"
    if work.exists():
        import shutil

        shutil.rmtree(work)  # a tuning cut off by a kill of this script starts again: its clock was lost
    work.mkdir(parents=True)
    log = out / "logs" / f"ms-{task.id}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    t_launch = time.time()
    with open(log, "w") as f:
        p = subprocess.Popen([sys.executable, "-c", "import sys; from experiments.bench_equal_clock import "
                              "_tune_child; _tune_child(*sys.argv[1:])", tid, backend, str(work), cache_dir],
                             stdout=f, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
        marks, minute, t0 = [], 1, None
        while p.poll() is None:
            if t0 is None:
                # the clock starts when tuning does (imports and task extraction not charged), generous to
                # MetaSchedule: LEKA's budget covers its root's import and first evaluation
                if (work / "tasks.json").is_file():
                    t0 = time.time()
                elif time.time() - t_launch > READY_S:
                    break
                time.sleep(0.2)
                continue
            now = time.time() - t0
            if now >= budget_s:
                break
            if now >= 60 * minute:
                marks.append((60 * minute, complete_lines(work / RECORDS)))
                minute += 1
            time.sleep(min(1.0, max(0.05, budget_s - now)))
        rc = p.poll()
        if rc is None:
            os.killpg(p.pid, signal.SIGKILL)  # the clock is up: MetaSchedule and its worker pools
            p.wait()
    wall = time.time() - (t0 or time.time())
    marks.append((round(min(wall, budget_s), 1), complete_lines(work / RECORDS)))
    tasks = json.loads((work / "tasks.json").read_text())["tasks"] if (work / "tasks.json").is_file() else None
    cuts = []
    for i, (sec, n) in enumerate(marks):
        name = "end" if i == len(marks) - 1 else f"m{int(sec // 60)}"
        cache = out / "ms" / task.id / name
        if tasks:
            _share_roots(cache, cache_dir)
            cut_database(work, baselines.ms_dir(task, backend, CLOCK_TRIALS, str(cache)), n, tasks,
                         {"seconds": sec, "budget_s": budget_s})
        cuts.append({"name": name, "seconds": sec, "records": n, "cache_dir": str(cache.relative_to(out))})
    return {"backend": backend, "task": tid, "budget_s": budget_s, "wall_s": round(wall, 1), "tasks": tasks,
            "startup_s": round((t0 or time.time()) - t_launch, 1),
            "rc": rc, "finished_early": rc is not None, "cuts": cuts, "ended": time.time(),
            **({"error": log.read_text()[-600:]} if rc not in (None, 0) or not tasks else {})}


def ms_clock(mode: str, budget_s: float, leka_wall_s: float | None) -> float:
    """MetaSchedule's wall clock for a task. `leka`: what LEKA's run of that task took from its start to its
    end (imports, waits for the measuring slot or GPU lock, and the evaluation that ran over the budget
    included: LEKA's own budget charges none of these), never less than the budget; `budget`: the nominal
    budget (LEKA then gets more wall clock than MetaSchedule: the H200 run of 2026-12-03)."""
    if mode == "budget" or leka_wall_s is None:
        return budget_s
    if mode == "leka":
        return max(budget_s, leka_wall_s)
    raise ValueError(f"--ms-clock {mode!r}: use leka or budget")


def cmd_run(args) -> None:
    from benchmark.subsets import load_subset
    from leka.core.config import load_config
    from leka.run import parse_duration

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.arm not in ARM_TEXT:
        sys.exit(f"unknown arm {args.arm!r}; use {', '.join(ARM_TEXT)}")
    budget_s = parse_duration(args.budget)
    ids = [t for t in args.tasks.split(",") if t] or load_subset("subset69", args.backend)
    cache_dir = load_config([], args.set).baseline.cache_dir
    ran = {r["task"] for r in read_rows(out / "runs.jsonl") if r.get("run_dir")}
    tuned = {r["task"] for r in read_rows(out / "tunes.jsonl") if r.get("cuts")}
    t_end = time.time() + 60 * args.minutes if args.minutes else None
    todo_r, todo_t = [t for t in ids if t not in ran], [t for t in ids if t not in tuned]
    print(f"{len(todo_r)} LEKA runs and {len(todo_t)} MetaSchedule tunings to do, {args.jobs} at once, "
          f"{args.budget} each", flush=True)
    _drain([(one_run, (args.backend, args.arm, t, out, args.budget, args.set)) for t in todo_r], args.jobs, t_end,
           out / "runs.jsonl", lambda r: f"LEKA {r['task']}: best {r.get('best_speedup') or 0:.2f}x, evals "
                                         f"{r.get('evaluations')}, {r['wall_s']}s")
    walls = {t: float(r["wall_s"]) for (t,), r in latest(read_rows(out / "runs.jsonl"), "task").items()
             if r.get("run_dir") and r.get("wall_s")}
    _drain([(one_tune, (args.backend, t, out, ms_clock(args.ms_clock, budget_s, walls.get(t)), cache_dir))
            for t in todo_t], args.jobs, t_end,
           out / "tunes.jsonl", lambda r: f"MetaSchedule {r['task']}: {r['cuts'][-1]['records']} records in "
                                          f"{r['wall_s']}s ({r.get('tasks')} kernels)")


# ----------------------------------------------------------------------------- judge
def leka_anytime(run_dir: Path) -> list[tuple[float, float]]:
    from candidate_tree import Tree
    from leka.exp.arms import anytime_from_nodes

    tree = Tree(run_dir, create=False, mirror=False)
    try:
        return anytime_from_nodes(tree.nodes())
    finally:
        tree.close()


def cut_config(run: dict, cut: dict, out: Path, sets: list[str]):
    """The judge's config for one cut: the caller's settings, then the cut's baseline. No record at the
    cut: MetaSchedule's answer is the default lowering, the untuned baseline. The cut's settings come
    last: a caller's `baseline.cache_dir` (experiments/gpu passes one) sent the H200 judge to a cache
    without the cut's database (6 tasks read `bad_input`)."""
    from leka.core.config import load_config

    kind = "tuned" if cut["records"] else "untuned"
    return load_config([], [f"backend={run['backend']}", *sets, f"baseline.kind={kind}",
                            f"baseline.trials={CLOCK_TRIALS}", f"baseline.cache_dir={out / cut['cache_dir']}"])


def judge_cut(run: dict, cut: dict, out: Path, sets: list[str]) -> dict:
    from benchmark.judge import Evaluator
    from benchmark.task import resolve
    from leka.ir.files import load_candidate

    tid = run["task"]
    row: dict[str, Any] = {"task": tid, "cut": cut["name"], "seconds": cut["seconds"], "records": cut["records"]}
    cfg = cut_config(run, cut, out, sets)
    kind = cfg.baseline.kind
    task = resolve(tid)
    cand = load_candidate(task, out / run["run_dir"], run["backend"], workdir=out / "candidates")
    t0 = time.time()
    res = Evaluator(cfg.evaluator, run["backend"], cfg.baseline).evaluate(task, cand)
    row.update(kind=kind, correct=res.correct, speedup=res.speedup, lo=res.speedup_lo, hi=res.speedup_hi,
               timing_valid=res.timing_valid, t_leka_s=res.t_candidate_s, t_ms_s=res.t_baseline_s,
               loaded=res.loaded, error_kind=res.error_kind, error=(res.error or "")[:400],
               wall_s=round(time.time() - t0, 1), ended=time.time())
    row["status"] = "ok" if res.correct and res.t_baseline_s else "failed"
    return row


def _safe(fn, *a) -> dict:
    try:
        return fn(*a)
    except Exception as e:  # noqa: BLE001 - one item's failure is its row
        return {"task": a[0]["task"], "cut": a[1]["name"], "status": "failed", "error": f"{type(e).__name__}: {e}"[:500]}


def cmd_judge(args) -> None:
    out = Path(args.out)
    runs = {t: r for (t,), r in latest(read_rows(out / "runs.jsonl"), "task").items() if r.get("run_dir")}
    tunes = {t: r for (t,), r in latest(read_rows(out / "tunes.jsonl"), "task").items() if r.get("cuts")}
    done = {(r["task"], r["cut"]) for r in read_rows(out / "judged.jsonl") if r.get("status") == "ok"}
    items = [(runs[t], c) for t in runs if t in tunes for c in reversed(tunes[t]["cuts"])
             if (t, c["name"]) not in done]  # the end cut first: it is the table's verdict
    meta = {"machine": machine(), "versions": versions(), "sets": args.set, "time": time.time()}
    (out / f"judge_meta-{int(time.time())}.json").write_text(json.dumps(meta, indent=1))
    print(f"{len(items)} evaluations to do, {args.jobs} at once", flush=True)
    t_end = time.time() + 60 * args.minutes if args.minutes else None
    _drain([(_safe, (judge_cut, run, c, out, args.set)) for run, c in items], args.jobs, t_end, out / "judged.jsonl",
           lambda r: f"{r['task']} vs MetaSchedule@{r['cut']}: {r.get('speedup') or 0:.3f}x "
                     f"[{r.get('lo') or 0:.3f}, {r.get('hi') or 0:.3f}] {r['status']}")


# ----------------------------------------------------------------------------- render
def verdict(r: dict | None) -> str:
    """'win' (interval above 1), 'loss' (below), 'tie' (contains 1), or why there is none."""
    if r is None:
        return "-"
    if r.get("status") != "ok":
        return r.get("error_kind") or "failed"
    lo, hi = r.get("lo"), r.get("hi")
    if lo is None or hi is None:
        return "no interval"
    return "win" if lo > 1.0 else "loss" if hi < 1.0 else "tie"


def anytime_rows(final_speedup: float, leka_pts: list, ms_rows: list[dict], budget_s: float) -> list[tuple]:
    """(minute, LEKA, MetaSchedule) on LEKA's final answer's scale (1.0 = its answer; higher = faster)."""
    rows = []
    for m in range(1, int(math.ceil(budget_s / 60)) + 1):
        sec = min(60 * m, budget_s)
        lk = max((s for t, s in leka_pts if t <= sec), default=None)
        # its latest cut by then (one that stopped by itself keeps its answer)
        ms = max((r for r in ms_rows if r.get("status") == "ok" and r["seconds"] <= sec + 1.0),
                 key=lambda r: r["seconds"], default=None)
        rows.append((m, lk / final_speedup if lk and final_speedup else None,
                     1.0 / ms["speedup"] if ms and ms.get("speedup") else None))
    return rows


def render(out: Path) -> str:
    from benchmark.judge import fmt_interval

    runs = {t: r for (t,), r in latest(read_rows(out / "runs.jsonl"), "task").items()}
    tunes = {t: r for (t,), r in latest(read_rows(out / "tunes.jsonl"), "task").items()}
    judged = latest(read_rows(out / "judged.jsonl"), "task", "cut")
    metas = sorted(out.glob("judge_meta-*.json"))
    meta = json.loads(metas[-1].read_text()) if metas else {}
    budget = next((r.get("budget") for r in runs.values() if r.get("budget")), "?")
    arm = next((r.get("arm") for r in runs.values() if r.get("arm")), "leka")
    lines = [f"# LEKA vs MetaSchedule at equal wall clock ({budget} a task)", "",
             f"- Machine: {meta.get('machine', '?')}; {meta.get('versions', '')}",
             f"- LEKA: {ARM_TEXT.get(arm, arm)}, `leka run --budget {budget}`; MetaSchedule: `tune_relax` of the "
             "unscheduled lowering for the same wall clock, killed at the end (its database then is its answer)",
             "- Cell: LEKA's answer / MetaSchedule's, interleaved pairs, median and interval; win = interval above 1",
             "- Wall clock: LEKA's run from start to end (its own budget charges neither the waits for the measuring "
             "slot or GPU lock nor the imports) / MetaSchedule's from its tuning's start to its kill",
             "", "| task | LEKA evals | MS kernels | MS records | wall s LEKA / MS | LEKA / MS at the end | verdict |",
             "|---|---|---|---|---|---|---|"]
    counts: dict[str, int] = {}
    tasks = sorted(set(runs) | set(tunes))
    for t in tasks:
        r = judged.get((t, "end"))
        v = verdict(r)
        counts[v] = counts.get(v, 0) + 1
        cell = fmt_interval(r["speedup"], r.get("lo"), r.get("hi")) if r and r.get("status") == "ok" else "-"
        tu = tunes.get(t) or {}
        run = runs.get(t) or {}
        lines.append(f"| {t} | {run.get('evaluations', '-')} | {tu.get('tasks', '-')} | "
                     f"{(tu.get('cuts') or [{}])[-1].get('records', '-')} | {_num(run.get('wall_s'))} / "
                     f"{_num(tu.get('wall_s'))} | {cell} | {v} |")
    lines += ["", "Verdicts: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) + f" (of {len(tasks)})"]
    lines += _anytime_table(out, runs, tunes, judged)
    return "\n".join(lines) + "\n"


def _num(x: Any) -> str:
    return f"{float(x):.0f}" if isinstance(x, (int, float)) else "-"


def _anytime_table(out: Path, runs: dict, tunes: dict, judged: dict) -> list[str]:
    """Per minute, the median over tasks of both arms on LEKA's final answer's scale."""
    import statistics

    by_min: dict[int, tuple[list, list]] = {}
    for t, run in runs.items():
        tu, rd = tunes.get(t), run.get("run_dir")
        if not tu or not rd or not (out / rd).is_dir() or not run.get("best_speedup"):
            continue
        ms_rows = [judged[(t, c["name"])] for c in tu["cuts"] if (t, c["name"]) in judged]
        for m, lk, ms in anytime_rows(float(run["best_speedup"]), leka_anytime(out / rd), ms_rows, tu["budget_s"]):
            a, b = by_min.setdefault(m, ([], []))
            if lk is not None:
                a.append(lk)
            if ms is not None:
                b.append(ms)
    if not by_min:
        return []
    lines = ["", "## Anytime (median over tasks; 1.00 = LEKA's final answer, higher = faster)", "",
             "| minute | LEKA (tasks) | MetaSchedule (tasks) |", "|---|---|---|"]
    for m, (a, b) in sorted(by_min.items()):
        lines.append(f"| {m} | {statistics.median(a):.2f} ({len(a)}) | " +
                     (f"{statistics.median(b):.2f} ({len(b)})" if b else "-") + " |")
    return lines


def main() -> None:
    ap = grid_parser(__doc__)
    ap.add_argument("--arm", default="leka")
    ap.add_argument("--ms-clock", default="leka", choices=["leka", "budget"],
                    help="MetaSchedule's clock per task: LEKA's run's wall clock (default) or the nominal budget")
    dispatch(ap.parse_args(), cmd_run, cmd_judge, render)


if __name__ == "__main__":
    main()
