"""Measuring slots (benchmark/slots.py): evaluations of one machine queue for N slots across processes,
a dead holder frees its slot, and the wait is neither the evaluation's timeout nor the run's budget."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from benchmark import slots
from benchmark.evaluator import Evaluator
from benchmark.task import load_task_file
from leka.core.config import EvaluatorConfig
from leka.loop.context import RunContext

DATA = Path(__file__).parent / "data"


@pytest.fixture(autouse=True)
def _slot_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LEKA_MEASURE_DIR", str(tmp_path / "slots"))


def _hold(n: int, ready, hold_s: float) -> None:
    with slots.acquire(n, "llvm"):
        ready.set()
        time.sleep(hold_s)


def _holder(n: int, hold_s: float):
    """Another process that holds one of n slots for hold_s (started, and holding, on return)."""
    ctx = mp.get_context("fork")
    ready = ctx.Event()
    p = ctx.Process(target=_hold, args=(n, ready, hold_s))
    p.start()
    assert ready.wait(30)
    return p


def test_second_taker_waits_until_the_holder_releases():
    p = _holder(1, 1.0)
    s = slots.acquire(1, "llvm")
    s.release()
    p.join(10)
    assert s.waited_s > 0.5


def test_two_slots_do_not_wait_for_one_holder():
    p = _holder(2, 2.0)
    with slots.acquire(2, "llvm") as s:
        assert s.waited_s < 0.5 and s.index >= 0
    p.join(10)


def test_a_killed_holder_frees_its_slot():
    p = _holder(1, 600.0)
    with pytest.raises(TimeoutError, match="no measuring slot"):
        slots.acquire(1, "llvm", timeout_s=0.3)
    os.kill(p.pid, signal.SIGKILL)
    p.join(10)
    with slots.acquire(1, "llvm", timeout_s=5) as s:
        assert s.index == 0


def test_no_limit_is_a_dummy_slot():
    s = slots.acquire(0, "llvm")
    assert s.index == -1 and s.waited_s == 0.0
    s.release()


def test_evaluation_waits_for_a_slot_and_the_run_budget_does_not_count_the_wait(tmp_path):
    task = load_task_file(DATA / "tiny_task.py")
    cfg = EvaluatorConfig(timeout_s=60, memory_cap_gb=2.0, measure_slots=1)
    ev = Evaluator(cfg, cache_dir=str(tmp_path / "cache"))
    ctx = RunContext(cfg=None, task=task, run_dir=tmp_path, tree=None, evaluator=ev, agents={}, router=None,
                     root=None)
    hold_s = 2.0
    held = slots.acquire(1, "llvm")  # another job's evaluation holds the only slot for hold_s
    threading.Timer(hold_s, held.release).start()
    ctx.tick({})
    t0 = time.monotonic()
    res = ev.evaluate(task, time_it=False)
    wall = time.monotonic() - t0
    used = ctx.tick({})
    assert res.correct, res.error
    assert res.extra["slot_wait_s"] >= hold_s * 0.8
    # the evaluation's own timeout clock started after the wait
    assert res.wall_s < wall - hold_s * 0.8 + 0.5
    assert used == pytest.approx(wall - res.extra["slot_wait_s"], abs=0.3)
    assert ev.wait_s == pytest.approx(res.extra["slot_wait_s"])
