"""The 23 CUDA tasks of subset69 on a GPU machine: LEKA runs (rule policy), MetaSchedule tuning of
their baselines, then one table of the best candidates against DLight (TVM's untuned GPU schedules),
MetaSchedule-N, PyTorch eager and torch.compile.

    python experiments/gpu/cuda_subset.py runs  --out DIR [--budget 30s] [--jobs 6] [--tasks a,b]
    python experiments/gpu/cuda_subset.py tune  --out DIR [--trials 16] [--jobs 8] [--cache-dir C]
    python experiments/gpu/cuda_subset.py table --out DIR [--trials 16] [--jobs 6] [--gpus 2] [--no-tune]
    python experiments/gpu/cuda_subset.py render --out DIR

`runs` starts one `leka run --backend cuda` per task, `--jobs` at a time: builds overlap, while
checks and timings take the GPU one evaluation at a time (benchmark/judge/gpu_timing.py's lock).
`tune` runs `leka bench baseline --backend cuda --trials N` per task, `--jobs` at a time, on the
GPUs it is given (CUDA_VISIBLE_DEVICES): keep it off the GPU that times.
`table` takes each run's best candidate and, in a fresh process per task (task i on GPU i mod
--gpus, one lock per GPU), builds DLight / MetaSchedule-N / best and torch.compile's module (in
parallel across tasks), then, holding that GPU's lock, times all five with the same device timer
(CUDA events, L2 flushed before every call), interleaved sample by sample, and re-checks the best
against PyTorch. With --no-tune a task whose MetaSchedule database is not cached gets no MS cell
(tuning there would share the GPU with timings). Writes DIR/runs.json, DIR/timings.jsonl,
DIR/table.json and DIR/table.md.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import multiprocessing as mp
import os
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmark.judge import geomean  # noqa: E402


# ----------------------------------------------------------------------------- runs
def one_run(tid: str, out: Path, budget: str, extra: list[str]) -> dict:
    runs = out / "runs"
    log = out / "logs" / f"{tid}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    cmd = [sys.executable, "-m", "leka.cli", "run", "--task", tid, "--backend", "cuda", "--budget", budget,
           "--out", str(runs), "--quiet", *extra]
    done = [d for d in runs.glob(f"{tid}-*") if (d / "summary.json").exists()]
    rc = 0
    if not (os.environ.get("LEKA_REUSE_RUNS") and done):  # a session cut short: its finished runs are kept
        with open(log, "w") as f:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    dirs = sorted(runs.glob(f"{tid}-*"), key=lambda p: p.stat().st_mtime)
    row = {"task": tid, "rc": rc, "wall_s": round(time.time() - t0, 1)}
    if dirs and (dirs[-1] / "summary.json").exists():
        s = json.loads((dirs[-1] / "summary.json").read_text())
        row.update({k: s.get(k) for k in ("run_dir", "best_node", "best_speedup_vs_untuned", "best_correct",
                                          "best_timing_valid", "nodes_by_level", "evaluations", "stop_reason")})
        if s.get("best_node") is not None:  # the best candidate on its own, so a table needs no tree
            from candidate_tree import Tree

            tree = Tree(dirs[-1], create=False)
            (out / "best").mkdir(exist_ok=True)
            art = tree.artifact(s["best_node"], "candidate.json")
            cand = json.loads(art if isinstance(art, str) else art.decode())
            if cand.get("params_file"):  # an L0 edit's parameters live in the run's work folder: copied along
                npz = out / "best" / f"{tid}.npz"
                shutil.copyfile(cand["params_file"], npz)
                cand["params_file"] = npz.name
            (out / "best" / f"{tid}.json").write_text(json.dumps(cand))
            tree.close()
    else:
        row["error"] = log.read_text()[-800:]
    return row


def cmd_runs(args) -> None:
    from benchmark.subsets import load_subset

    out = Path(args.out)
    ids = [t for t in args.tasks.split(",") if t] or load_subset("subset69", "cuda")
    extra = [x for s in args.set for x in ("--set", s)]
    rows = []
    with cf.ThreadPoolExecutor(args.jobs) as pool:
        futs = {pool.submit(one_run, t, out, args.budget, extra): t for t in ids}
        for f in cf.as_completed(futs):
            r = f.result()
            rows.append(r)
            (out / "runs.json").write_text(json.dumps(rows, indent=1))  # so far: a cut-off session keeps these
            print(f"[{len(rows)}/{len(ids)}] {r['task']}: best {r.get('best_speedup_vs_untuned') or 0:.2f}x vs DLight, "
                  f"correct {r.get('best_correct')}, nodes {r.get('nodes_by_level')}, {r['wall_s']}s", flush=True)
    rows.sort(key=lambda r: ids.index(r["task"]))
    (out / "runs.json").write_text(json.dumps(rows, indent=1))


# ----------------------------------------------------------------------------- tune
def cmd_tune(args) -> None:
    """MetaSchedule databases for the tasks' roots, one `leka bench baseline` process per task."""
    from benchmark.subsets import load_subset

    out = Path(args.out)
    ids = [t for t in args.tasks.split(",") if t] or load_subset("subset69", "cuda")
    (out / "tune").mkdir(parents=True, exist_ok=True)

    def one(tid: str) -> tuple[str, int, float]:
        t0 = time.time()
        with open(out / "tune" / f"{tid}.log", "w") as f:
            rc = subprocess.run([sys.executable, "-m", "leka.cli", "bench", "baseline", "--task", tid, "--backend",
                                 "cuda", "--trials", str(args.trials), "--cache-dir", args.cache_dir],
                                stdout=f, stderr=subprocess.STDOUT, cwd=ROOT).returncode
        return tid, rc, time.time() - t0

    with cf.ThreadPoolExecutor(args.jobs) as pool:
        for n, (tid, rc, s) in enumerate(pool.map(one, ids), 1):
            print(f"[{n}/{len(ids)}] tuned {tid}: rc {rc}, {s:.0f}s", flush=True)


# ----------------------------------------------------------------------------- table
def _time(timers: dict, target_s: float = 0.05, samples: int = 7) -> dict[str, float]:
    """Per timer, the median over `samples` of the mean per-call seconds of n flushed calls (n sized
    to ~target_s per sample); the timers take turns sample by sample, so a drift of the GPU's
    clocks or of the host falls on all of them alike."""
    ns = {k: max(3, min(200, int(target_s / max(t(1), 1e-6)))) for k, t in timers.items()}
    got: dict[str, list[float]] = {k: [] for k in timers}
    for _ in range(samples):
        for k, t in timers.items():
            got[k].append(t(ns[k]))
    return {k: statistics.median(v) for k, v in got.items()}


def load_best(out: Path, tid: str):
    """DIR/best/TASK.json as a Candidate; its L0 parameters (if any) from DIR/best/TASK.npz beside it."""
    from leka import ir

    d = json.loads((out / "best" / f"{tid}.json").read_text())
    if d.get("params_file") and not Path(d["params_file"]).is_absolute():
        d["params_file"] = str((out / "best" / d["params_file"]).resolve())
    return ir.Candidate.model_validate(d)


def _ms_executable(task, root, target, trials: int, cache_dir: str, tune: bool, res: dict):
    """The MetaSchedule-N baseline built, or None (the reason in res["ms_error"]: a table cell)."""
    from benchmark import baselines

    if not trials:
        return None
    try:
        d = baselines.ms_dir(task, "cuda", trials, cache_dir)
        if not baselines.is_tuned(d):
            if not tune:
                raise RuntimeError(f"no MetaSchedule-{trials} database cached (not tuned in this session)")
            d, _ = baselines.ensure_tuned(task, "cuda", trials, cache_dir)
        return baselines.tuned_executable(task, root, "cuda", target, str(d))
    except Exception as e:  # noqa: BLE001 - a task MetaSchedule cannot tune is a table cell
        res["ms_error"] = f"{type(e).__name__}: {str(e).splitlines()[-1][:200] if str(e) else ''}"
        return None


def _torch_compiled(mc, tin, res: dict):
    """torch.compile(mc), compiled here (outside the GPU lock); None with res["compile_error"] on failure."""
    import torch

    try:
        compiled = torch.compile(mc)
        with torch.no_grad():
            compiled(*tin)
        torch.cuda.synchronize()
        return compiled
    except Exception as e:  # noqa: BLE001
        res["compile_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        return None


def table_task(row: dict, trials: int, cache_dir: str, out: str, gpu: int | None = None,
               tune: bool = True) -> dict:
    if gpu is not None:  # before torch / TVM touch CUDA in this (spawned) process
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
        os.environ["LEKA_GPU_LOCK"] = f"/tmp/leka-gpu-lock-{gpu}"
    import warnings

    warnings.filterwarnings("ignore")
    import torch

    from benchmark.judge import flat_outputs, gpu_timing
    from benchmark.roots import load_root
    from benchmark.task import resolve
    from leka import ir
    from leka import tvm_adapter as A

    A.cuda_runtime_setup()
    res: dict = {"task": row["task"], "gpu": gpu}
    try:
        task = resolve(row["task"])
        root = load_root(task, cache_dir)
        target = A.make_target("cuda")
        best = load_best(Path(out), row["task"])
        t0 = time.time()
        ms = _ms_executable(task, root, target, trials, cache_dir, tune, res)
        res["tune_s"] = round(time.time() - t0, 1)
        ex_best = ir.build_candidate(best, target, root.params).executable
        ex_dl = ir.build_candidate(ir.root_candidate(task, "cuda", root), target, root.params).executable
        inputs = [t.detach().numpy() for t in task.make_inputs(0)]
        model = task.make_model().eval()
        with torch.no_grad():
            refs = flat_outputs(model(*task.make_inputs(0)))
        mc = task.make_model().eval().to("cuda")
        tin = [torch.from_numpy(a.copy()).to("cuda") for a in inputs]
        compiled = _torch_compiled(mc, tin, res)
        with gpu_timing.gpu_lock():
            res["t"] = _time(_gpu_timers(res, task, inputs, refs, tin,
                                         {"best": ex_best, "dlight": ex_dl, "ms": ms},
                                         {"eager": mc, "compile": compiled}))
        tb = res["t"]["best"]
        res["vs"] = {k: v / tb for k, v in res["t"].items() if k != "best"}
    except Exception as e:  # noqa: BLE001
        res["error"] = f"{type(e).__name__}: {e}"[:600] + "\n" + traceback.format_exc()[-800:]
    return res


def _gpu_timers(res: dict, task, inputs: list, refs: list, tin: list, executables: dict, torch_fns: dict) -> dict:
    """{name: timer} for each TVM executable (checked against the references first, into `res`) and
    each torch callable (run once first: one that cannot run on the GPU loses its cell only), all under
    one L2 flusher. Called inside the GPU lock."""
    import torch

    from benchmark.judge import compare, gpu_timing
    from leka import tvm_adapter as A

    dev = A.device_for("cuda")
    fl = A.L2Flusher(dev)
    timers = {}
    for key, ex in executables.items():
        if ex is None:
            continue
        r = A.VMRunner(ex, dev)
        args = r.to_device(inputs)
        outs = [o.numpy() for o in r.run_device(args)]
        kind, msg, _, _ = compare(outs, refs, task.atol, task.rtol)
        res[f"{key}_check"] = kind or "ok"
        timers[key] = gpu_timing.tvm_gpu_timer(r, args, fl).sample
    for key, fn in torch_fns.items():
        if fn is None:
            continue

        def call(fn=fn):
            with torch.no_grad():
                fn(*tin)

        try:
            call()
        except Exception as e:  # noqa: BLE001 - a model that cannot run on the GPU loses its cell only
            res[f"{key}_error"] = f"{type(e).__name__}: {str(e)[:200]}"
            continue
        timers[key] = gpu_timing.torch_cuda_timer(call, fl).sample
    return timers


def fmt(x, spec=".2f") -> str:
    return "-" if x is None else format(x, spec)


def _meta(args) -> dict:
    import torch
    import tvm

    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip().splitlines()
    return {"device": smi[0] if smi else "?", "gpus": len(smi), "gpus_timing": args.gpus, "torch": torch.__version__,
            "tvm": tvm.__version__, "trials": args.trials,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "budget": args.budget_note}


def cmd_table(args) -> None:
    out = Path(args.out)
    (out / "meta.json").write_text(json.dumps(_meta(args)))
    rows = json.loads((out / "runs.json").read_text())
    todo = [r for r in rows if (out / "best" / f"{r['task']}.json").exists()]
    ctx = mp.get_context("spawn")  # each task a fresh process: CUDA is initialised in none before
    with cf.ProcessPoolExecutor(args.jobs, mp_context=ctx, max_tasks_per_child=1) as pool, \
            open(out / "timings.jsonl", "a") as log:
        futs = {pool.submit(table_task, r, args.trials, args.cache_dir, str(out),
                            (i % args.gpus) if args.gpus else None, not args.no_tune): r["task"]
                for i, r in enumerate(todo)}
        for f in cf.as_completed(futs):
            try:
                r = f.result()
            except Exception as e:  # noqa: BLE001 - a worker that died (a CUDA fault) is a row
                r = {"task": futs[f], "error": f"{type(e).__name__}: {e}"[:600]}
            log.write(json.dumps(r) + "\n")
            log.flush()
            print(f"{r['task']}: {r.get('vs')} {r.get('error', '')[:300]} {r.get('ms_error', '')}", flush=True)
    cmd_render(args)


def cmd_render(args) -> None:
    """DIR/table.md and DIR/table.json from DIR/runs.json and DIR/timings.jsonl (the last line per task)."""
    out = Path(args.out)
    rows = json.loads((out / "runs.json").read_text())
    results = {}
    if (out / "timings.jsonl").exists():
        for line in (out / "timings.jsonl").read_text().splitlines():
            r = json.loads(line)
            results[r["task"]] = r
    meta = json.loads((out / "meta.json").read_text()) if (out / "meta.json").exists() else {}
    ms_n = f"MS-{meta.get('trials')}"
    lines = ["# CUDA subset (subset69, 23 robotics tasks) on the H200, rule policy", "",
             f"- machine: {meta.get('device')} ({meta.get('gpus')} GPU(s), {meta.get('gpus_timing')} timing); "
             f"date {meta.get('date')}; torch {meta.get('torch')}, TVM {meta.get('tvm')}; "
             f"MetaSchedule trials: {meta.get('trials')} per task (max_trials_global); run budget per task: "
             f"{meta.get('budget')}",
             "- columns vs X = t_X / t_best (above 1: LEKA's best is faster). All five timed in one process per task "
             "while it holds its GPU, taking turns sample by sample; TVM's device timer / CUDA events, L2 flushed "
             "(128 MiB copy) before every call; median of 7 samples.", "",
             f"| task | run: best vs DLight | correct (3 seeds, run) | re-check | vs DLight | vs {ms_n} | vs torch eager "
             "| vs torch.compile | nodes L0/L1/L2 | evals | t_best (us) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    cols = {"dlight": [], "ms": [], "eager": [], "compile": []}
    for r in rows:
        t = results.get(r["task"], {})
        vs = t.get("vs", {})
        for k in cols:
            cols[k].append(vs.get(k))
        n = r.get("nodes_by_level") or {}
        lines.append(f"| {r['task']} | {fmt(r.get('best_speedup_vs_untuned'))} | {r.get('best_correct')} | "
                     f"{t.get('best_check', t.get('error', '-')[:40].replace('|', '/'))} | {fmt(vs.get('dlight'))} | "
                     f"{fmt(vs.get('ms')) if 'ms_error' not in t else 'no MS'} | {fmt(vs.get('eager'))} | "
                     f"{fmt(vs.get('compile')) if 'compile_error' not in t else 'failed'} | "
                     f"{n.get('L0', 0)}/{n.get('L1', 0)}/{n.get('L2', 0)} | {r.get('evaluations')} | "
                     f"{fmt((t.get('t') or {}).get('best', None) and t['t']['best'] * 1e6, '.1f')} |")
    lines += ["", "geomean: " + ", ".join(f"vs {k} {fmt(geomean(v))}x" for k, v in cols.items()),
              f"correct best: {sum(1 for r in rows if r.get('best_correct'))}/{len(rows)}; "
              f"trees with all three levels: {sum(1 for r in rows if all((r.get('nodes_by_level') or {}).get(lv) for lv in ('L0', 'L1', 'L2')))}/{len(rows)}"]
    kinds = ("error", "ms_error", "eager_error", "compile_error")
    errs = [f"- {k} ({e}): {v[e]}".splitlines()[0][:300] for k, v in results.items() for e in kinds if v.get(e)]
    if errs:
        lines += ["", "Errors:", *errs]
    (out / "table.json").write_text(json.dumps({"rows": rows, "timings": results}, indent=1))
    (out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["runs", "tune", "table", "render"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget", default="30s")
    ap.add_argument("--budget-note", default="30 s")
    ap.add_argument("--jobs", type=int, default=6)
    ap.add_argument("--tasks", default="")
    ap.add_argument("--trials", type=int, default=16)
    ap.add_argument("--cache-dir", default=os.environ.get("LEKA_CACHE", ".leka-cache"))
    ap.add_argument("--gpus", type=int, default=1, help="table: spread tasks over this many GPUs (0: as visible)")
    ap.add_argument("--no-tune", action="store_true", help="table: use cached MetaSchedule databases only")
    ap.add_argument("--set", action="append", default=[], help="key=value passed to each leka run")
    args = ap.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    {"runs": cmd_runs, "tune": cmd_tune, "table": cmd_table, "render": cmd_render}[args.what](args)


if __name__ == "__main__":
    main()
