"""`leka run` end to end on the embedded MobileNetV2 block: determinism, routing ablations, layer
switches, crash + resume, and one-line errors for bad arguments."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MBV2 = str(ROOT / "benchmark" / "examples" / "mbv2_block.py")


def leka(*args: str, timeout: float = 600, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "leka.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def run_dir_of(out: Path) -> Path:
    dirs = [d for d in out.iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def tree_rows(run_dir: Path) -> list[tuple]:
    con = sqlite3.connect(run_dir / "tree.sqlite")
    try:
        return con.execute("SELECT id, parent, level, edit, candidate_hash FROM nodes ORDER BY id").fetchall()
    finally:
        con.close()


def quick(out: Path, *extra: str) -> list[str]:
    return ["run", "--task", MBV2, "--budget", "8m", "--out", str(out), "--quiet",
            "--set", "evaluator.timing_budget_s=0.5", "--set", f"baseline.cache_dir={out.parent / 'cache'}", *extra]


def test_same_seed_same_tree(tmp_path):
    trees = []
    for i in range(2):
        out = tmp_path / f"out{i}"
        r = leka(*quick(out, "--max-evals", "4", "--routing", "round_robin", "--seed", "3"))
        assert r.returncode == 0, r.stderr[-2000:]
        rows = tree_rows(run_dir_of(out))
        assert len(rows) >= 2
        # an edit's rationale quotes measured shares ("score 0.775"); the edit itself must not differ
        trees.append([(p, lv, {k: v for k, v in json.loads(e).items() if k != "rationale"} if e else None, h)
                      for _, p, lv, e, h in rows])
    assert trees[0] == trees[1]


def test_fixed_l1_never_leaves_l1_and_writes_results(tmp_path):
    out = tmp_path / "out"
    # one kernel per L1 edit: a batched edit schedules the block's every kernel at once, L1 then has
    # nothing more for that node and a fixed route falls through (tests/test_loop.py)
    # 1.5 s of timing per evaluation (quick's 0.5 s left every L1 child's interval too wide to trust
    # in one CI run: the best stayed the root, 0.996x)
    r = leka(*quick(out, "--max-evals", "5", "--routing", "fixed:L1", "--set", "run.l1_batch=0",
                    "--set", "evaluator.timing_budget_s=1.5"))
    assert r.returncode == 0, r.stderr[-2000:]
    d = run_dir_of(out)
    levels = {lv for _, _, lv, _, _ in tree_rows(d) if lv is not None}
    assert levels == {"L1"}
    s = json.loads((d / "summary.json").read_text())
    for key in ("task", "backend", "best_node", "best_speedup_vs_untuned", "best_correct", "nodes_by_level",
                "budget_used_s"):
        assert key in s
    assert s["nodes_by_level"]["L0"] == 0 and s["nodes_by_level"]["L2"] == 0 and s["nodes_by_level"]["L1"] >= 1
    assert s["best_correct"] is True and s["best_speedup_vs_untuned"] > 1.5  # a scheduled conv beats untuned
    for f in ("tree.sqlite", "config.yaml", "report.md", "best.so", "load_best.py"):
        assert (d / f).is_file(), f
    assert "## Lineage of the best candidate" in (d / "report.md").read_text()
    # the root's evaluation timed the baseline against itself: the run's noise floor, in summary and report
    nf = s["noise_floor"]
    assert nf["pairs"] >= 1 and 0.8 < nf["speedup"] < 1.25, nf
    assert "- noise floor: the baseline against itself" in (d / "report.md").read_text()
    # the exported module loads and runs in a fresh process
    code = ("import numpy as np, tvm; from tvm import relax; import sys\n"
            "vm = relax.VirtualMachine(tvm.runtime.load_module(sys.argv[1]), tvm.cpu())\n"
            "o = vm['main'](tvm.runtime.tensor(np.random.rand(1, 32, 28, 28).astype('float32')))\n"
            "print(o[0].numpy().shape)")
    r = subprocess.run([sys.executable, "-c", code, str(d / "best.so")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "(1, 32, 28, 28)" in r.stdout, r.stderr[-1500:]


def test_layers_switch_off_l2(tmp_path):
    out = tmp_path / "out"
    r = leka(*quick(out, "--max-evals", "8", "--layers", "L0,L1", "--routing", "round_robin"))
    assert r.returncode == 0, r.stderr[-2000:]
    levels = [lv for _, _, lv, _, _ in tree_rows(run_dir_of(out)) if lv is not None]
    assert "L2" not in levels and {"L0", "L1"} & set(levels)


def test_sigkill_then_resume_loses_nothing(tmp_path):
    out = tmp_path / "out"
    args = [sys.executable, "-m", "leka.cli", *quick(out, "--max-evals", "9", "--routing", "round_robin")]
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 400
    d = None
    try:
        while time.monotonic() < deadline:
            time.sleep(1)
            if out.exists() and [x for x in out.iterdir() if x.is_dir()]:
                d = run_dir_of(out)
                if (d / "tree.sqlite").exists():
                    con = sqlite3.connect(d / "tree.sqlite")
                    try:
                        n = con.execute("SELECT COUNT(*) FROM nodes WHERE result IS NOT NULL").fetchone()[0]
                    except sqlite3.OperationalError:  # the file is there, its tables not yet
                        n = 0
                    finally:
                        con.close()
                    if n >= 3:
                        break
            assert p.poll() is None, p.stderr.read().decode()[-2000:]
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(30)
    assert d is not None
    before = tree_rows(d)
    assert len(before) >= 3 and not (d / "summary.json").exists()
    r = leka("run", "--resume", str(d), "--quiet")
    assert r.returncode == 0, r.stderr[-2000:]
    after = tree_rows(d)
    assert after[: len(before)] == before  # nothing lost, nothing rewritten
    s = json.loads((d / "summary.json").read_text())
    assert s["best_correct"] and s["evaluations"] >= 9 - 1


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "--task", "no_such_task_xyz"], "unknown task"),
        (["run", "--task", MBV2, "--backend", "metal"], "unknown backend"),
        (["run", "--task", MBV2, "--budget", "0"], "more than zero"),
        (["run", "--task", MBV2, "--budget", "ten minutes"], "duration"),
        (["run", "--task", MBV2, "--routing", "psychic"], "routing"),
        (["run", "--task", MBV2, "--layers", "L0,L9"], "L9"),
        (["run", "--resume", "/nonexistent/run"], "not a LEKA run folder"),
    ],
)
def test_bad_arguments_one_line(args, needle, tmp_path):
    r = leka(*args, "--out", str(tmp_path / "o"))
    assert r.returncode == 2, (r.returncode, r.stderr[-1500:])
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], r.stderr
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


@pytest.mark.parametrize(("key", "value", "needle"), [("routing", "psychic", "routing"), ("layers", ["L0", "L9"], "L9"),
                                                      ("routing", "fixed:L2", "not in layers")])
def test_resume_checks_the_folders_config(key, value, needle, tmp_path):
    """A run folder's config.yaml meets the checks a new run's options do (the config's validators)."""
    import yaml

    from leka.core.config import LekaConfig, dump_config

    d = tmp_path / "run"
    d.mkdir()
    cfg = LekaConfig().model_dump(mode="json")
    cfg["run"].update({"layers": ["L0", "L1"]}, **{key: value})
    (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    (d / "run.json").write_text(json.dumps({"task": "mbv2", "task_path": MBV2}))
    r = leka("run", "--resume", str(d), "--quiet")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and needle in lines[0] and "--resume" in lines[0], r.stderr
    assert sorted(p.name for p in d.iterdir()) == ["config.yaml", "run.json"]  # nothing was started
    dump_config(LekaConfig(), d / "config.yaml")  # and the folder's own, valid config passes the check
    assert LekaConfig.model_validate(yaml.safe_load((d / "config.yaml").read_text())).run.routing == "profile"


def test_config_checks_routing_and_layers_whatever_sets_them():
    from leka.core.config import load_config
    from leka.core.types import UserError

    with pytest.raises(UserError, match="run.routing: .*unknown routing mode 'psychic'"):
        load_config([], ["run.routing=psychic"])
    with pytest.raises(UserError, match="run.layers: .*L9"):
        load_config([], [], options={"run": {"layers": ["L0", "L9"]}})
    with pytest.raises(UserError, match="fixed:L2 routes to a level not in layers"):
        load_config([], ["run.layers=[L0,L1]"], options={"run": {"routing": "fixed:L2"}})
    # typed options sit between the files and `--set`: an explicit key=value still wins
    cfg = load_config([], ["run.seed=7"], options={"run": {"seed": 3, "routing": "random"}, "llm": {"model": "a'b"}})
    assert (cfg.run.seed, cfg.run.routing, cfg.llm.model) == (7, "random", "a'b")

def test_unwritable_out_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    r = leka("run", "--task", MBV2, "--out", str(blocker / "runs"))
    assert r.returncode == 2 and "not writable" in r.stderr and "Traceback" not in r.stderr, r.stderr
