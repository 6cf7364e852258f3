"""Measuring slots (benchmark/judge/slots.py): evaluations of one machine queue for N slots across processes,
a dead holder frees its slot, and the wait is neither the evaluation's timeout nor the run's budget. The
CPU gate: shared for work that only competes for the cores, exclusive for timing, writer first."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from benchmark.judge import Evaluator, slots
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


def _timed_while_held(tmp_path, held, hold_s: float):
    """The tiny task evaluated (one slot) while `held` is released after hold_s, under a run context whose
    clock is read before and after: (result, evaluator, context, wall s, run time charged)."""
    from leka.core.config import load_config

    task = load_task_file(DATA / "tiny_task.py")
    cfg = EvaluatorConfig(timeout_s=60, memory_cap_gb=2.0, measure_slots=1)
    ev = Evaluator(cfg, cache_dir=str(tmp_path / "cache"))
    ctx = RunContext(cfg=load_config([], ["evaluator.measure_slots=1"]), task=task, run_dir=tmp_path, tree=None,
                     evaluator=ev, agents={}, router=None, root=None)
    threading.Timer(hold_s, held.release).start()
    ctx.tick({})
    t0 = time.monotonic()
    res = ev.evaluate(task, time_it=False)
    wall = time.monotonic() - t0
    return res, ev, ctx, wall, ctx.tick({})


def test_evaluation_waits_for_a_slot_and_the_run_budget_does_not_count_the_wait(tmp_path):
    hold_s = 2.0
    # another job's evaluation holds the only slot for hold_s
    res, ev, ctx, wall, used = _timed_while_held(tmp_path, slots.acquire(1, "llvm"), hold_s)
    assert res.correct, res.error
    assert res.extra["slot_wait_s"] >= hold_s * 0.8
    # the evaluation's own timeout clock started after the wait
    assert res.wall_s < wall - hold_s * 0.8 + 0.5
    assert used == pytest.approx(wall - res.extra["slot_wait_s"], abs=0.3)
    assert ev.wait_s == pytest.approx(res.extra["slot_wait_s"] + res.extra.get("gate_wait_s", 0.0))


# ----------------------------------------------------------------------------- the CPU gate
def _take(exclusive: bool, hold_s: float, log: list, name: str, enabled: bool = True) -> None:
    with slots.cpu_gate("llvm", exclusive, enabled) as h:
        log.append((name, "got", time.monotonic(), h.waited_s))
        time.sleep(hold_s)
    log.append((name, "released", time.monotonic(), 0.0))


def _at(log: list, name: str, what: str) -> float:
    return next(t for n, w, t, _ in log if n == name and w == what)


def test_shared_holders_overlap_and_an_exclusive_one_waits_for_them():
    log: list = []
    a = threading.Thread(target=_take, args=(False, 1.0, log, "build_a"))
    a.start()
    time.sleep(0.2)
    with slots.cpu_gate("llvm", False) as b:  # another build: at once
        assert b.waited_s < 0.2
    with slots.cpu_gate("llvm", True) as t:  # a timing: after build_a
        assert t.waited_s > 0.5
        assert time.monotonic() >= _at(log, "build_a", "released")
    a.join()


def test_an_exclusive_taker_goes_before_shared_ones_that_came_after_it():
    log: list = []
    build = threading.Thread(target=_take, args=(False, 1.0, log, "build"))
    build.start()
    time.sleep(0.2)
    timing = threading.Thread(target=_take, args=(True, 0.8, log, "timing"))
    timing.start()
    time.sleep(0.2)  # the timing waits for the build; a new build arrives meanwhile
    late = threading.Thread(target=_take, args=(False, 0.0, log, "late_build"))
    late.start()
    for th in (build, timing, late):
        th.join(10)
    # the late build waited for the timing, not only for the first build: no stream of builds starves it
    assert _at(log, "timing", "got") >= _at(log, "build", "released")
    assert _at(log, "late_build", "got") >= _at(log, "timing", "released")


def test_a_killed_exclusive_holder_frees_the_gate():
    ctx = mp.get_context("fork")
    ready = ctx.Event()

    def hold():
        with slots.cpu_gate("llvm", True):
            ready.set()
            time.sleep(600)

    p = ctx.Process(target=hold)
    p.start()
    assert ready.wait(30)
    os.kill(p.pid, signal.SIGKILL)
    p.join(10)
    with slots.cpu_gate("llvm", True) as h:
        assert h.waited_s < 5


def test_the_gate_off_holds_nothing():
    with slots.cpu_gate("llvm", True):
        with slots.cpu_gate("llvm", True, enabled=False) as h:  # a run alone: no gate
            assert h.waited_s == 0.0


def test_an_evaluations_checks_wait_for_other_jobs_builds_and_the_budget_does_not_count_it(tmp_path):
    hold_s = 15.0  # longer than the evaluation's own prepare and build (~6 s on a busy machine)
    # another job's build, on the cores for hold_s
    res, ev, ctx, wall, used = _timed_while_held(tmp_path, slots.cpu_gate("llvm", False), hold_s)
    assert res.correct, res.error
    # the build (shared) went ahead; the check (exclusive) waited for the other build's end
    assert res.extra["gate_wait_s"] >= 1.0, res.extra.get("phase_s")
    assert wall >= hold_s * 0.9
    assert ev.wait_s == pytest.approx(res.extra["gate_wait_s"] + res.extra.get("slot_wait_s", 0.0))
    assert used == pytest.approx(wall - ev.wait_s, abs=0.3)
    # this process's own shared work waits for a timing, and that wait is not the run's time either
    timing = slots.cpu_gate("llvm", True)
    threading.Timer(1.0, timing.release).start()
    ctx.tick({})
    with ctx.cpu_shared():
        pass
    assert ctx.gate_wait_s >= 0.8 and ctx.tick({}) - used < 0.3
