"""Issue 26, item 8: the worker dies with its judge. `leka bench eval` and `leka run`, stopped
mid-evaluation by SIGKILL, SIGTERM or SIGINT, leave no process behind: not the forkserver, not the
evaluation child it forked (its own session), not the reference child."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

DATA = Path(__file__).parent / "data"
TASK = str(DATA / "tiny_task.py")


def _tree(pid: int) -> dict[int, float]:
    """{pid: create_time} of the process's descendants (a pid alone could be reused)."""
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return {}
    out = {}
    for k in kids:
        try:
            out[k.pid] = k.create_time()
        except psutil.NoSuchProcess:
            pass
    return out


def _alive(procs: dict[int, float]) -> list[str]:
    left = []
    for pid, created in procs.items():
        try:
            p = psutil.Process(pid)
            if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{pid} {' '.join(p.cmdline())[:120]}")
        except psutil.NoSuchProcess:
            pass
    return left


def _evaluating(pid: int) -> bool:
    """An evaluation child exists: a grandchild of leka (forked by the forkserver, leka's child)."""
    try:
        return any(c.children() for c in psutil.Process(pid).children())
    except psutil.NoSuchProcess:
        return False


def _stop_mid_evaluation(args: list[str], sig: int, tmp_path: Path) -> None:
    p = subprocess.Popen([sys.executable, "-m", "leka.cli", *args], cwd=tmp_path,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    seen: dict[int, float] = {}
    try:
        deadline = time.time() + 240
        while time.time() < deadline and p.poll() is None and not _evaluating(p.pid):
            time.sleep(0.1)
        assert p.poll() is None, f"leka ended (exit {p.returncode}) before any evaluation child was seen"
        assert _evaluating(p.pid), "no evaluation child within 240 s"
        time.sleep(0.5)  # into the evaluation: the reference child may be up too
        seen = _tree(p.pid)
        os.kill(p.pid, sig)
        # SIGTERM / SIGINT: leka's own cleanup first (children killed, joined), so more time on a busy machine
        end = time.time() + (10 if sig == signal.SIGKILL else 20)
        while time.time() < end and (_alive(seen) or p.poll() is None):
            time.sleep(0.2)
        assert p.poll() is not None, f"leka did not stop on signal {sig}"
        left = _alive(seen)
        assert not left, f"left running after signal {sig} to leka: {left}"
    finally:
        for pid in [p.pid, *seen]:
            try:
                os.kill(pid, signal.SIGKILL)  # only what this test started (recorded by pid)
            except (ProcessLookupError, PermissionError):
                pass
        p.wait(10)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_bench_eval_leaves_nothing_behind(sig, tmp_path):
    _stop_mid_evaluation(["bench", "eval", TASK, "--set", "evaluator.timing_budget_s=30",
                          "--set", f"baseline.cache_dir={tmp_path / 'cache'}"], sig, tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_run_leaves_nothing_behind(sig, tmp_path):
    _stop_mid_evaluation(["run", "--task", TASK, "--budget", "1m", "--out", str(tmp_path / "out"),
                          "--set", "evaluator.timing_budget_s=30",
                          "--set", f"baseline.cache_dir={tmp_path / 'cache'}"], sig, tmp_path)
