"""The Claude Code arm's workspace: the folder the CLI works in, and its one measuring command.

    RUN_DIR/
      config.yaml            the resolved LEKA config: `./measure` and the final re-evaluation use its
                             evaluator and baseline sections (the same settings as the LEKA arm)
      evals.jsonl            one line per `./measure` call (written by the measuring command)
      evals/NNN/             that call's snapshot of the candidate folder, eval.json, output.txt
      workspace/             the CLI's working directory (and its HOME: workspace/.home)
        CONTRACT.md          what a candidate is, how it is judged, the budget
        task.py              the task file (the reference)
        candidate/           the starting candidate as editable files (leka.ir.files)
        views/               read-only reference: PrimFunc table, unscheduled TIR, what an L2 file starts
                             from (C prototypes; on a GPU the generated kernels and their schedules),
                             and profile.txt|json, the starting candidate's profile
        measure              `./measure [FOLDER]`: `leka bench eval` on a snapshot of FOLDER (a folder
                             of the workspace), on the backend's device (this machine, its GPU or PoCL,
                             or the config's board)
      cli_settings.json      the CLI's permissions (`--settings`): file tools inside the workspace only

CONTRACT.md is the same text for every backend but for what its files mean: those parts are the
backend's own (`Backend.contract_l1` / `contract_l2`, leka/backends/<name>.py).

The measuring command snapshots the folder before evaluating it, so the candidate judged later is the
one measured, whatever the agent writes afterwards.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from string import Template
from typing import Any

from leka.backends import get_backend
from leka.core.config import LekaConfig, dump_config

CONTRACT = Path(__file__).with_name("claude_code_contract.md")

_MEASURE = r'''#!$python
"""Evaluate a candidate folder with this run's evaluator: ./measure [FOLDER]  (default: candidate)."""
import json, os, shutil, subprocess, sys, time

RUN, TASK, BACKEND, ROOT = $run_dir, $task, $backend, $root
DEADLINE, BASELINE, TRIALS, RUNTIME_ENV = $deadline, $baseline, $trials, $runtime_env
src = sys.argv[1] if len(sys.argv) > 1 else "candidate"
# only folders of this workspace: the command runs outside the CLI's permissions, so a path to another
# run's candidate or a cache would hand the agent what its file tools may not read
WS = os.path.dirname(os.path.realpath(__file__))
if os.path.commonpath([os.path.realpath(src), WS]) != WS:
    print(f"measure: {src} is outside the workspace; measure a folder inside it")
    sys.exit(2)
if not os.path.isfile(os.path.join(src, "relax.py")):
    print(f"measure: {src} is not a candidate folder (no relax.py)")
    sys.exit(2)
evals = os.path.join(RUN, "evals")
os.makedirs(evals, exist_ok=True)
n = 1
while True:  # a fresh number even when two measures run at once
    d = os.path.join(evals, f"{n:03d}")
    try:
        os.mkdir(d)
        break
    except FileExistsError:
        n += 1
cand = os.path.join(d, "candidate")
shutil.copytree(src, cand, ignore=shutil.ignore_patterns("__pycache__", ".*"))
env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
env.update(RUNTIME_ENV)  # the harness's runtime settings of the backend: the CLI's own env is clean
env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
t0 = time.time()
out = os.path.join(d, "eval.json")
p = subprocess.run([sys.executable, "-m", "leka.cli", "bench", "eval", TASK, "--candidate", cand,
                    "--backend", BACKEND, "--baseline", BASELINE, "--trials", str(TRIALS),
                    "--config", os.path.join(RUN, "config.yaml"), "--json", out],
                   env=env, cwd=RUN, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
text = p.stdout
with open(os.path.join(d, "output.txt"), "w") as f:
    f.write(text)
try:
    with open(out) as f:
        r = json.load(f)
except (OSError, ValueError):
    r = {"compiled": False, "correct": False, "error_kind": "crash", "error": text.strip()[-2000:]}
row = {"n": n, "folder": os.path.relpath(cand, RUN), "source": src, "started": t0,
       "wall_s": round(time.time() - t0, 2), "exit": p.returncode,
       **{k: r.get(k) for k in ("compiled", "correct", "speedup", "timing_valid", "error_kind")},
       "error": (r.get("error") or "")[:2000] or None}
with open(os.path.join(RUN, "evals.jsonl"), "a") as f:
    f.write(json.dumps(row) + "\n")
print(text.rstrip()[-6000:])
left = max(0.0, DEADLINE - time.time()) / 60
print(json.dumps({"eval": n, "correct": row["correct"], "speedup": row["speedup"],
                  "error_kind": row["error_kind"], "error": row["error"], "minutes_left": round(left, 1)}))
sys.exit(0 if row["correct"] else 1)
'''


def project_root() -> Path:
    """The folder holding the `leka` package, so `./measure` runs the same code as the harness."""
    return Path(__file__).resolve().parents[2]


def machine_text(backend: str, target) -> str:
    from leka import tvm_adapter as A

    tj = A.target_json(target)
    threads = A.max_threads_per_block(target)
    if threads and get_backend(backend).gpu:
        return f"- backend `{backend}`, TVM target `{target}`\n- up to {threads} threads per block"
    cores = tj.get("num-cores") or os.cpu_count()
    return (f"- backend `{backend}`, TVM target `{target}`\n- {cores} cores; float32 vector lanes: "
            f"{A.vector_lanes_fp32(target)}")


def baseline_desc(cfg: LekaConfig) -> str:
    """The baseline in the contract's words: the engines' names, version and settings included."""
    from benchmark import baselines

    if cfg.baseline.kind == "untuned":
        return "TVM's default lowering of the same model (untuned)"
    return baselines.label(cfg.baseline.kind, cfg.backend, trials=cfg.baseline.trials)


def write_contract(ws: Path, cfg: LekaConfig, budget_s: float, machine: str, threads: int | None = None) -> None:
    from leka.ir import sched

    b = get_backend(cfg.backend)
    fill = {"max_threads": str(threads or "the target's")}
    text = Template(CONTRACT.read_text()).safe_substitute(
        budget_min=f"{budget_s / 60:g}", primitives=", ".join(sorted(sched.PRIMITIVES)),
        baseline_desc=baseline_desc(cfg), machine=machine,
        backend_l1=Template(b.contract_l1).safe_substitute(fill),
        backend_l2=Template(b.contract_l2).safe_substitute(fill))
    (ws / "CONTRACT.md").write_text(text)


def write_profile(views: Path, task, start, cfg: LekaConfig) -> None:
    """The starting candidate's profile (the same evaluation as the loop's root, on the backend's
    device): views/profile.json and its text, views/profile.txt."""
    from benchmark.judge import Evaluator
    from leka.loop.context import profile_text

    res, prof = Evaluator(cfg.evaluator, cfg.backend, cfg.baseline, device=cfg.device).evaluate_full(
        task, start, time_it=False, profile=True)  # the profile times the kernels itself
    (views / "profile.json").write_text(json.dumps(prof or {}, indent=1, default=str))
    text = profile_text(prof) or f"(no profile: {res.error_kind or 'the evaluation gave none'}: {res.error or ''})"
    (views / "profile.txt").write_text(text.rstrip() + "\n")


def runtime_env(backend: str) -> dict[str, str]:
    """What `./measure` needs of the harness's environment to run candidates where the backend runs
    (the CLI, and so the command, gets a clean one): the cache home and the backend's own variables
    (`Backend.runtime_env`: the OpenCL plugin and ICDs, the visible GPUs), as set here. PYTHONPATH too:
    where the harness's packages come from a path rather than a venv (the H200's unpacked TVM and
    wheels), `leka bench eval` would not import without it."""
    names = ("LEKA_CACHE", "PYTHONPATH", *get_backend(backend).runtime_env)
    return {k: os.environ[k] for k in names if k in os.environ}


def write_measure(ws: Path, run_dir: Path, task_path: str, cfg: LekaConfig, deadline: float) -> Path:
    text = Template(_MEASURE).substitute(
        python=sys.executable, run_dir=repr(str(run_dir.resolve())), task=repr(task_path),
        backend=repr(cfg.backend), root=repr(str(project_root())), deadline=repr(deadline),
        baseline=repr(cfg.baseline.kind), trials=repr(cfg.baseline.trials),
        runtime_env=repr(runtime_env(cfg.backend)))
    p = ws / "measure"
    p.write_text(text)
    p.chmod(0o555)  # the CLI's Edit / Write of it are denied too (cli_settings): it runs as the user
    return p


def cli_settings(ws: Path, run_dir: Path, cache_dirs: list[Path]) -> dict[str, Any]:
    """The CLI's permission settings (passed with `--settings`, from a file outside the workspace so
    the agent cannot edit them): its file tools read and write the workspace alone. Claude Code
    2.1.257+ `blockReadsOutsideWorkingDirectories` refuses Read / Glob / Grep outside the working
    directory in every permission mode (2.1.314+ `blockWritesOutsideWorkingDirectories` the same for
    Edit / Write); the deny rules (deny wins over any allow; `//` starts an absolute path) name the
    judge's caches and this run's own records besides, should a CLI ignore the blocks; `./measure`
    and the CLI's own settings and home stay unwritable (the command runs with the user's rights)."""
    deny: list[str] = []
    for d in dict.fromkeys(str(Path(c).resolve()) for c in cache_dirs):
        deny += [f"Read(/{d}/**)", f"Edit(/{d}/**)"]
    run = str(run_dir.resolve())
    for sub in ("evals", "judge", "nodes"):
        deny += [f"Read(/{run}/{sub}/**)", f"Edit(/{run}/{sub}/**)"]
    deny += ["Edit(./measure)", "Edit(./.claude/**)", "Edit(./.home/**)"]
    return {"permissions": {"deny": deny, "additionalDirectories": [],
                            "blockReadsOutsideWorkingDirectories": True,
                            "blockWritesOutsideWorkingDirectories": True,
                            "denyInsteadOfPrompting": True}}


def write_cli_settings(ws: Path, run_dir: Path, cfg: LekaConfig) -> Path:
    """RUN_DIR/cli_settings.json (`cli_settings` over every cache a judge of this run reads)."""
    from leka.backends.paths import cache_home

    caches = [Path(cfg.baseline.cache_dir), cache_home(), project_root() / ".leka-cache"]
    p = run_dir / "cli_settings.json"
    p.write_text(json.dumps(cli_settings(ws, run_dir, caches), indent=1))
    return p


def prepare(run_dir: Path, task, cfg: LekaConfig, budget_s: float, deadline: float) -> Path:
    """Make RUN_DIR/workspace (see the module docstring) and RUN_DIR/config.yaml; returns the workspace."""
    from benchmark.roots import load_root
    from leka import ir
    from leka import tvm_adapter as A
    from leka.ir.files import write_candidate, write_views

    # the cache of baselines and roots is shared with the other arms, wherever the CLI's cwd is
    cfg.baseline.cache_dir = str(Path(cfg.baseline.cache_dir).resolve())
    dump_config(cfg, run_dir / "config.yaml")
    ws = run_dir / "workspace"
    (ws / ".home").mkdir(parents=True)
    (ws / "task.py").write_text(task.path.read_text())
    root = load_root(task, cfg.baseline.cache_dir)
    start = ir.root_candidate(task, cfg.backend, root)
    write_candidate(start, ws / "candidate", root.params)
    write_views(start, ws / "views", root.params)
    write_profile(ws / "views", task, start, cfg)
    target = A.make_target(cfg.backend)
    write_contract(ws, cfg, budget_s, machine_text(cfg.backend, target), A.max_threads_per_block(target))
    write_measure(ws, run_dir, str(task.path), cfg, deadline)
    write_cli_settings(ws, run_dir, cfg)
    (run_dir / "start.digest").write_text(folder_digest(ws / "candidate"))
    return ws


def read_evals(run_dir: Path) -> list[dict[str, Any]]:
    """The `./measure` log; a line cut short by a kill is skipped."""
    p = run_dir / "evals.jsonl"
    rows = []
    for line in p.read_text().splitlines() if p.is_file() else []:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def folder_digest(folder: Path) -> str:
    """Content hash of a candidate folder (names and bytes of its files), to tell an untouched one."""
    import hashlib

    h = hashlib.sha256()
    for p in sorted(x for x in folder.rglob("*") if x.is_file() and "__pycache__" not in x.parts):
        h.update(str(p.relative_to(folder)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def best_eval(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The correct evaluation with the highest speedup (a correct one without a speedup ranks last)."""
    ok = [r for r in rows if r.get("correct")]
    return max(ok, key=lambda r: (r.get("speedup") or 0.0, -r["n"])) if ok else None
