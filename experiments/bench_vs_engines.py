"""Issue 29: LEKA's answers against what a user would run instead, on one backend's subset69 tasks, and
against the machine's measured roof.

    python experiments/bench_vs_engines.py run    --backend B --out DIR [--budget 5m] [--arms leka,leka_ms]
                                                  [--jobs 1] [--tasks a,b] [--set k=v]
    python experiments/bench_vs_engines.py judge  --out DIR [--baselines untuned,tuned,torch,...] [--jobs 1]
                                                  [--trials 256] [--tuned-tasks a,b] [--set k=v]
    python experiments/bench_vs_engines.py render --out DIR [--md FILE]

`run`: one `leka run --policy rules --budget B` per task and arm: `leka` is the paper's setting (no
schedule search by the compiler, tuner.enabled=false), `leka_ms` the MetaSchedule tool on (the L1 agent
may tune the hottest kernels, agents/l1_tune.py). `judge`: each run's best candidate judged by the
evaluator (`Evaluator.evaluate`, exactly what `leka bench eval TASK --candidate RUN_DIR --baseline
KIND` does: checked over the seeds, then interleaved pairs against the baseline with the speedup's
interval) against every baseline kind the backend's table takes (benchmark/baselines.py); a kind a
task cannot take is a row with its reason. The `untuned` evaluation also profiles the candidate, which
gives its SOL time under the measured roof (profilers/roof.py) and so each task's fraction of roof and
its SOL score against every baseline. `tuned` (MetaSchedule-N) is judged where a database of N trials is
cached (`leka bench baseline --trials N`), or for `--tuned-tasks` after tuning them here first.

Everything is resumable: DIR/runs.jsonl and DIR/judged.jsonl get one JSON line per finished item and a
second call skips what is there; `--minutes M` stops starting new items after M minutes. On a CPU keep
`--jobs 1` (timings own the cores; `flock -x /tmp/leka-cpu.lock`); on a GPU evaluations queue for the
GPU lock (benchmark/judge/gpu_timing.py), so several jobs overlap their builds only.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from experiments.engines_bounds import against_before, answer_hot, behind_lines  # noqa: E402

ARMS = {"leka": ["tuner.enabled=false"], "leka_ms": ["tuner.enabled=true"]}
ARM_TEXT = {"leka": "LEKA, rule policy, MetaSchedule tool off (tuner.enabled=false, the paper's setting)",
            "leka_ms": "LEKA, rule policy, MetaSchedule tool on (tuner.enabled=true)"}
_lock = threading.Lock()


def _append(path: Path, row: dict) -> None:
    with _lock, open(path, "a") as f:
        f.write(json.dumps(row, default=str) + "\n")


def read_rows(path: Path) -> list[dict]:
    """The JSON lines of a results file; a line cut off by a kill is skipped (its item runs again)."""
    if not path.is_file():
        return []
    rows = []
    for ln in path.read_text().splitlines():
        try:
            rows.append(json.loads(ln))
        except json.JSONDecodeError:
            continue
    return rows


def latest(rows: list[dict], *key: str) -> dict[tuple, dict]:
    """The last row per key (a re-judged item replaces the earlier one)."""
    return {tuple(r.get(k) for k in key): r for r in rows}


# ----------------------------------------------------------------------------- run
def one_run(backend: str, arm: str, tid: str, out: Path, budget: str, sets: list[str]) -> dict:
    from benchmark.task import resolve

    name = resolve(tid).id  # the run folder's prefix (tid may be a task file's path)
    runs = out / "runs" / arm
    log = out / "logs" / f"{arm}-{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    before = set(runs.glob(f"{name}-*"))
    cmd = [sys.executable, "-m", "leka.cli", "run", "--task", tid, "--backend", backend, "--budget", budget,
           "--policy", "rules", "--seed", "0", "--out", str(runs), "--quiet",
           *[x for s in [*ARMS[arm], *sets] for x in ("--set", s)]]
    t0 = time.time()
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    new = sorted(set(runs.glob(f"{name}-*")) - before, key=lambda p: p.stat().st_mtime)
    row: dict[str, Any] = {"backend": backend, "arm": arm, "task": tid, "rc": rc, "budget": budget,
                           "wall_s": round(time.time() - t0, 1), "ended": time.time()}
    if new and (new[-1] / "summary.json").is_file():
        s = json.loads((new[-1] / "summary.json").read_text())
        row["run_dir"] = str(new[-1].relative_to(out))
        row.update({k: s.get(k) for k in ("best_node", "best_speedup", "best_speedup_lo", "best_speedup_hi",
                                          "best_correct", "nodes_by_level", "evaluations", "stop_reason",
                                          "budget_used_s", "budget_s", "noise_floor", "tuner")})
    else:
        row["error"] = log.read_text()[-800:]
    return row


def cmd_run(args) -> None:
    from benchmark.subsets import load_subset

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ids = [t for t in args.tasks.split(",") if t] or load_subset("subset69", args.backend)
    arms = [a for a in args.arms.split(",") if a]
    bad = [a for a in arms if a not in ARMS]
    if bad:
        sys.exit(f"unknown arm {bad[0]!r}; use {', '.join(ARMS)}")
    done = {(r["arm"], r["task"]) for r in read_rows(out / "runs.jsonl") if r.get("run_dir")}
    todo = [(a, t) for a in arms for t in ids if (a, t) not in done]
    print(f"{len(todo)} runs to do ({len(done)} done), {args.jobs} at once, budget {args.budget}", flush=True)
    t_end = time.time() + 60 * args.minutes if args.minutes else None
    _drain([(one_run, (args.backend, a, t, out, args.budget, args.set)) for a, t in todo], args.jobs, t_end,
           out / "runs.jsonl",
           lambda r: f"{r['arm']} {r['task']}: best {r.get('best_speedup') or 0:.2f}x, correct "
                     f"{r.get('best_correct')}, evals {r.get('evaluations')}, {r['wall_s']}s")


def _drain(calls: list[tuple[Any, tuple]], jobs: int, t_end: float | None, sink: Path, say) -> None:
    """Each (fn, args) on a pool of `jobs`, none started after `t_end`; each row appended to `sink` as it
    finishes (a killed call keeps what was done) and said in one line."""
    with cf.ThreadPoolExecutor(jobs) as pool:
        futs = [pool.submit(_gated, t_end, fn, *a) for fn, a in calls]
        for i, f in enumerate(cf.as_completed(futs), 1):
            row = f.result()
            if row is None:
                continue
            _append(sink, row)
            print(f"[{i}/{len(calls)}] {say(row)}", flush=True)


def _gated(t_end: float | None, fn, *a):
    if t_end is not None and time.time() > t_end:
        return None  # out of this call's minutes: left for the next call
    return fn(*a)


# ----------------------------------------------------------------------------- judge
def judge_one(run: dict, kind: str, out: Path, trials: int, sets: list[str]) -> dict:
    from benchmark import baselines
    from benchmark.judge import Evaluator
    from benchmark.task import resolve
    from leka.core.config import load_config
    from leka.ir.files import load_candidate
    from profilers.roof import task_roof

    backend, tid = run["backend"], run["task"]
    row: dict[str, Any] = {"backend": backend, "arm": run["arm"], "task": tid, "kind": kind,
                           "label": baselines.label(kind, backend, threads=len(os.sched_getaffinity(0)),
                                                    trials=trials)}
    refused = baselines.refusal(kind, backend)
    if refused:
        return {**row, "status": "unsupported", "error": refused}
    cfg = load_config([], [f"baseline.kind={kind}", f"baseline.trials={trials}", *sets])
    task = resolve(tid)
    if kind == "tuned" and not baselines.is_tuned(baselines.ms_dir(task, backend, trials, cfg.baseline.cache_dir)):
        return {**row, "status": "not_tuned", "error": f"no MetaSchedule-{trials} database cached"}
    cand = load_candidate(task, out / run["run_dir"], backend, workdir=Path(cfg.baseline.cache_dir) / "candidates")
    ev = Evaluator(cfg.evaluator, backend, cfg.baseline)
    t0 = time.time()
    profile = kind == "untuned"  # one profile per answer: its roof
    res, prof = ev.evaluate_full(task, cand, profile=profile, noise_floor=True)
    row.update(correct=res.correct, speedup=res.speedup, lo=res.speedup_lo, hi=res.speedup_hi,
               timing_valid=res.timing_valid, t_candidate_s=res.t_candidate_s, t_baseline_s=res.t_baseline_s,
               loaded=res.loaded, noise_floor=res.extra.get("noise_floor"), error_kind=res.error_kind,
               error=(res.error or "")[:500], baseline_name=res.extra.get("baseline_name"),
               timer=res.extra.get("timer"), wall_s=round(time.time() - t0, 1), ended=time.time())
    row["status"] = ("unsupported" if res.error_kind == "baseline_unsupported" else
                     "ok" if res.correct and res.t_baseline_s else "failed")
    if profile and row["status"] == "ok":
        row["hot"] = answer_hot(out, run)
    if profile and prof:
        summ = out / run["run_dir"] / "summary.json"  # the root's FLOPs: the task's work (profilers/roof.py)
        root_flops = json.loads(summ.read_text()).get("root_flops") if summ.is_file() else None
        tr = task_roof(prof, measured_s=res.t_candidate_s, task_flops=root_flops)
        if tr is not None:
            row.update(roof_s=tr.roof_s, roof_fraction=tr.fraction, roof_bound=tr.bound, roof_key=tr.peaks_key)
        pk = prof.get("peaks") or {}
        if pk:
            row["peaks"] = {k: pk.get(k) for k in ("gflops", "gbps", "source", "cpu", "threads", "dtype", "model",
                                                   "device", "measured_at")}
            row["peaks"]["levels"] = [{"name": lv.get("name"), "capacity": lv.get("capacity"),
                                       "gbps": max(lv.get(k) or 0.0 for k in ("read_gbps", "copy_gbps", "triad_gbps"))}
                                      for lv in pk.get("levels") or []]
    return row


def cmd_judge(args) -> None:
    from benchmark import baselines
    from benchmark.task import resolve
    from leka.core.config import load_config

    out = Path(args.out)
    runs = [r for r in latest(read_rows(out / "runs.jsonl"), "arm", "task").values() if r.get("run_dir")]
    if not runs:
        sys.exit(f"{out}/runs.jsonl has no finished run: `run` first")
    kinds = [k for k in args.baselines.split(",") if k]
    bad = [k for k in kinds if k not in baselines.BASELINES]
    if bad:
        sys.exit(f"unknown baseline {bad[0]!r}; use {', '.join(baselines.BASELINES)}")
    meta = {"judge_started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine(), "versions": versions(), "sets": args.set, "trials": args.trials,
            "argv": sys.argv[1:]}
    (out / f"judge_meta-{int(time.time())}.json").write_text(json.dumps(meta, indent=1))
    if args.tuned_tasks and "tuned" in kinds:  # tuned here first, one task at a time (it owns the machine)
        cache = load_config([], args.set).baseline.cache_dir
        for tid in [t for t in args.tuned_tasks.split(",") if t]:
            d, reused = baselines.ensure_tuned(resolve(tid), runs[0]["backend"], args.trials, cache)
            print(f"MetaSchedule-{args.trials} {tid}: {'cached' if reused else 'tuned'} ({d})", flush=True)
    # failed and not-tuned items are tried again; a measured or refused one is kept
    done = {key for key, r in latest(read_rows(out / "judged.jsonl"), "arm", "task", "kind").items()
            if r.get("status") in ("ok", "unsupported")}
    # the untuned evaluation first per answer: it carries the profile, hence the roof
    order = sorted(kinds, key=lambda k: k != "untuned")
    todo = [(r, k) for r in runs if r.get("best_correct") for k in order if (r["arm"], r["task"], k) not in done]
    print(f"{len(todo)} evaluations to do, {args.jobs} at once", flush=True)
    t_end = time.time() + 60 * args.minutes if args.minutes else None
    _drain([(_safe_judge, (r, k, out, args.trials, args.set)) for r, k in todo], args.jobs, t_end,
           out / "judged.jsonl", lambda row: f"{row['arm']} {row['task']} vs {row['kind']}: {row['status']} {_cell(row)}")
    # each answer's hottest kernel beside its roof (rows judged before judge_one recorded it get it here)
    for (a, t, k), row in latest(read_rows(out / "judged.jsonl"), "arm", "task", "kind").items():
        run = next((r for r in runs if (r["arm"], r["task"]) == (a, t)), None)
        if k == "untuned" and row.get("status") == "ok" and "hot" not in row and run is not None:
            _append(out / "judged.jsonl", {**row, "hot": answer_hot(out, run)})


def _safe_judge(run: dict, kind: str, out: Path, trials: int, sets: list[str]) -> dict:
    try:
        return judge_one(run, kind, out, trials, sets)
    except Exception as e:  # noqa: BLE001 - one item's failure is its row
        return {"backend": run["backend"], "arm": run["arm"], "task": run["task"], "kind": kind,
                "status": "failed", "error": f"{type(e).__name__}: {e}"[:500]}


# ----------------------------------------------------------------------------- render
def machine() -> str:
    cpu = ""
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                   if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    gpu = ""
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return (f"{platform.machine()} {cpu}, {len(os.sched_getaffinity(0))} cores in the affinity set"
            + (f"; GPU {gpu}" if gpu else ""))


def versions() -> str:
    from benchmark.engines import version

    names = ("apache-tvm", "torch", "onnxruntime", "onnx", "MNN", "tensorrt")
    return ", ".join(f"{d} {v}" for d in names if (v := version(d)))


def _cell(r: dict | None) -> str:
    """'1.53x [1.41, 1.66]' with '+' when the interval is above 1 (faster), '-' below (slower), '?' when
    it was too wide to trust; the status otherwise."""
    from benchmark.judge import fmt_interval

    if r is None:
        return "-"
    if r.get("status") != "ok":
        return {"unsupported": "n/a", "not_tuned": "not tuned"}.get(r.get("status"), "failed")
    s = fmt_interval(r["speedup"], r.get("lo"), r.get("hi"))
    if not r.get("timing_valid"):
        return s + "?"
    if r.get("lo") is not None and r["lo"] > 1:
        return s + " +"
    if r.get("hi") is not None and r["hi"] < 1:
        return s + " -"
    return s


def _kind_order(kinds: set[str]) -> list[str]:
    from benchmark.baselines import BASELINES

    return [k for k in BASELINES if k in kinds]


def _load(out: Path) -> dict[str, Any]:
    """What the table is made of: the latest row per item, the judge's meta, the kinds and arms."""
    runs = latest(read_rows(out / "runs.jsonl"), "arm", "task")
    judged = latest(read_rows(out / "judged.jsonl"), "arm", "task", "kind")
    kinds = _kind_order({k for (_, _, k) in judged})
    return {"out": out, "runs": runs, "judged": judged, "kinds": kinds,
            "metas": [json.loads(p.read_text()) for p in sorted(out.glob("judge_meta-*.json"))],
            "arms": [a for a in ARMS if any(a == arm for (arm, _) in runs)],
            "tasks": list(dict.fromkeys(t for (_, t) in runs)), "ref": "tuned" if "tuned" in kinds else "untuned",
            "labels": {k: next(r.get("label") or k for (_, _, kk), r in judged.items() if kk == k) for k in kinds}}


def _idle_text(d: dict[str, Any]) -> str:
    """Whether the runs had the idle MetaSchedule round (`tuner.when_idle`), from each run's resolved
    config: the arm's label says `tuner.enabled` only, and the round is on by default since issue 44."""
    import yaml

    on = 0
    for r in d["runs"].values():
        p = d["out"] / r["run_dir"] / "config.yaml" if r.get("run_dir") else None
        if p is not None and p.is_file():
            on += bool(((yaml.safe_load(p.read_text()) or {}).get("tuner") or {}).get("when_idle"))
    return (f"; the idle MetaSchedule round on (tuner.when_idle=true) in {on} of {len(d['runs'])} runs"
            if on else "")


def _head(d: dict[str, Any]) -> list[str]:
    runs, judged, metas, kinds, ref = d["runs"], d["judged"], d["metas"], d["kinds"], d["ref"]
    backend = next(iter(runs.values()))["backend"] if runs else "?"
    peaks = next((r["peaks"] for r in judged.values() if r.get("peaks")), None)
    budgets = sorted({r.get("budget") for r in runs.values()})
    stamps = [r.get("ended") for r in [*runs.values(), *judged.values()] if r.get("ended")]
    when = (f"{_utc(min(stamps))} to {_utc(max(stamps))} UTC" if stamps else "-")
    # where the caches were is the machine's business, not the table's
    sets = [x for x in (metas[-1]["sets"] if metas else []) if "cache_dir" not in x]
    lines = [f"# LEKA against the engines a user would run instead: subset69, {backend}", "",
             f"- When: {when}; `experiments/bench_vs_engines.py` (run, judge, render).",
             f"- Machine: {metas[-1]['machine'] if metas else '-'}",
             f"- Versions: {metas[-1]['versions'] if metas else '-'}",
             f"- Runs: {', '.join(ARM_TEXT[a] for a in d['arms'])}; budget {', '.join(map(str, budgets))} a task, seed 0"
             f"{_idle_text(d)}.",
             f"- Judge: `Evaluator.evaluate` (what `leka bench eval TASK --candidate RUN_DIR --baseline KIND` runs): "
             f"checked over the seeds, then interleaved pairs against each baseline; cells are the speedup of LEKA's "
             f"answer over the baseline with its 95% interval (`+` above 1, `-` below 1, `?` too wide to trust). "
             f"Overrides: {', '.join(sets) if sets else 'none (the defaults)'}.",
             "- Baselines: " + "; ".join(f"`{k}` = {d['labels'][k]}" for k in kinds) + "."]
    if peaks:
        lv = ", ".join(f"{x['name']} {x['gbps']:.0f} GB/s" for x in peaks.get("levels") or []
                       if x.get("gbps") and x.get("name") != "DRAM")
        lines.append(f"- Roof (`leka bench roof`, {peaks.get('source')}, {peaks.get('measured_at') or '-'}): "
                     f"{peaks.get('model') or peaks.get('cpu')}, {peaks.get('gflops', 0):.0f} GFLOP/s {peaks.get('dtype')}"
                     + (f" at {peaks.get('threads')} threads" if peaks.get("device") != "gpu" else "")
                     + f"; bandwidth {lv or '-'}, DRAM {peaks.get('gbps', 0):.0f} GB/s. "
                     "Roof: the answer's SOL time (its kernels at these peaks) over its judged time; SOL score "
                     f"against `{ref}` (SOL-ExecBench's form: 1 at the roof, 0.5 at the baseline).")
    return lines + [""]


def _table(d: dict[str, Any]) -> list[str]:
    from profilers.roof import fmt_fraction, fmt_sol, sol_score

    runs, judged, kinds, ref = d["runs"], d["judged"], d["kinds"], d["ref"]
    head = ["task", "arm", "evals", "nodes L0/L1/L2", *[f"vs {k}" for k in kinds], "roof", f"SOL vs {ref}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for t in d["tasks"]:
        for a in d["arms"]:
            r = runs.get((a, t))
            if r is None:
                continue
            nb = r.get("nodes_by_level") or {}
            u = judged.get((a, t, "untuned")) or {}
            rr = judged.get((a, t, ref)) or {}
            sol = (sol_score(rr["t_candidate_s"], rr["t_baseline_s"], u["roof_s"])
                   if rr.get("status") == "ok" and u.get("roof_s") else None)
            cells = [t, a, str(r.get("evaluations", "-")), "/".join(str(nb.get(k, 0)) for k in ("L0", "L1", "L2")),
                     *[(_cell(judged.get((a, t, k))) if r.get("best_correct") else "no correct answer") for k in kinds],
                     fmt_fraction(u.get("roof_fraction")), fmt_sol(sol)]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def _summary(d: dict[str, Any]) -> list[str]:
    from benchmark import judge
    from profilers.roof import fmt_fraction

    runs, judged, kinds, arms, tasks = d["runs"], d["judged"], d["kinds"], d["arms"], d["tasks"]
    lines = ["", "## Summary per arm and baseline", "",
             "| arm | baseline | tasks judged | median speedup | geomean [95% CI over tasks] | faster (lo > 1) | slower (hi < 1) |",
             "|---|---|---|---|---|---|---|"]
    for a in arms:
        for k in kinds:
            rs = [r for (aa, _, kk), r in judged.items() if aa == a and kk == k and r.get("status") == "ok"]
            sp = [r["speedup"] for r in rs if r.get("speedup")]
            g = judge.geomean_interval(sp) if sp else None
            lines.append(f"| {a} | {k} | {len(sp)} | {statistics.median(sp):.2f}x | {judge.fmt_interval(*g) if g else '-'} "
                         f"| {sum(1 for r in rs if r.get('lo') and r['lo'] > 1)} | "
                         f"{sum(1 for r in rs if r.get('hi') and r['hi'] < 1)} |" if sp else f"| {a} | {k} | 0 | - | - | - | - |")
    engines = [k for k in kinds if k not in ("untuned", "tuned")]
    if engines:
        lines += ["", f"Against the best engine of each task (the fastest of {', '.join(engines)} on that task):", ""]
        for a in arms:
            per = [min(sp) for t in tasks
                   if (sp := [r["speedup"] for k in engines if (r := judged.get((a, t, k))) and r.get("status") == "ok"])]
            if per:
                lines.append(f"- {a}: median task {statistics.median(per):.2f}x over {len(per)} tasks "
                             f"(at least 1.00x on {sum(x >= 1 for x in per)})")
        lines += behind_lines(d, engines)
    fracs = [judged[(a, t, "untuned")]["roof_fraction"] for a in arms for t in tasks
             if judged.get((a, t, "untuned"), {}).get("roof_fraction")]
    if fracs:
        lines += ["", f"Median fraction of roof of the answers: {fmt_fraction(statistics.median(fracs))} "
                  f"({len(fracs)} answers)."]
    unused = [f"{a}/{t}" for (a, t), r in runs.items() if r.get("stop_reason") and "budget" not in r["stop_reason"]]
    if unused:
        lines += ["", f"Runs that ended before their budget: {', '.join(unused)}."]
    return lines


def render(out: Path, before: Path | None = None) -> str:
    d = _load(out)
    extra = against_before(d, _load(before)) if before is not None else []
    return "\n".join(_head(d) + _table(d) + _summary(d) + extra) + "\n"


def _utc(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")


def grid_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments every run / judge / render script of this kind takes (bench_equal_clock too)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("what", choices=["run", "judge", "render"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--backend", default="llvm")
    ap.add_argument("--budget", default="5m")
    ap.add_argument("--tasks", default="")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--minutes", type=float, default=0.0, help="start nothing new after this many minutes")
    ap.add_argument("--set", action="append", default=[], help="key=value for every run / evaluation")
    ap.add_argument("--md", default="", help="render: write the table here too")
    return ap


def dispatch(args, cmd_run, cmd_judge, render_fn) -> None:
    if args.what == "run":
        cmd_run(args)
    elif args.what == "judge":
        cmd_judge(args)
    else:
        before = getattr(args, "before", "")
        text = render_fn(Path(args.out), Path(before)) if before else render_fn(Path(args.out))
        if args.md:
            Path(args.md).write_text(text)
        print(text)


def main() -> None:
    ap = grid_parser(__doc__)
    ap.add_argument("--arms", default="leka,leka_ms")
    ap.add_argument("--baselines", default="untuned,tuned,torch,torch_compile,torch_compile_cg,ort,mnn,tensorrt")
    ap.add_argument("--trials", type=int, default=256, help="the tuned baseline's MetaSchedule trials")
    ap.add_argument("--tuned-tasks", default="", help="judge: tune these first (MetaSchedule-TRIALS)")
    ap.add_argument("--before", default="", help="render: an earlier table's folder; per task, now / before")
    dispatch(ap.parse_args(), cmd_run, cmd_judge, render)


if __name__ == "__main__":
    main()
