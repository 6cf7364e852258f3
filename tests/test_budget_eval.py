"""Issue 44, item 5: evaluations cost what their precision needs. The root of a task whose baseline is
its own program and slow is timed once, alone, and its samples are the baseline's; later evaluations are
timed alone against them (unpaired, Welch's interval), each timed sample's drawn call checked against the
task's model in the judge, so a kernel that stops computing once timing starts is still stale. The tiny
task stands in for a slow one (`reuse_baseline_s` ~0 marks any root slow); the export of a judged
candidate builds without a second check. Real evaluations on the tiny task; no timing claim."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_l2 import COMPUTE, HEAD, HONEST, l2_candidate, sandbox_evaluator

from benchmark.judge import stats
from benchmark.task import load_task_file
from leka import ir

DATA = Path(__file__).parent / "data"
# correct for the checked runs and the warm-up, then it leaves its output untouched
STOPS = HEAD + COMPUTE + r"""
static long calls = 0;
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  if (++calls <= 12) compute(x, w, out);
  return 0;
}
"""


@pytest.fixture(scope="module")
def task():
    return load_task_file(DATA / "tiny_task.py")


@pytest.fixture(scope="module")
def root(task):
    return ir.import_root(task)


def test_a_slow_root_is_timed_alone_and_its_samples_are_reused(task, root, tmp_path):
    ev = sandbox_evaluator(tmp_path, reuse_baseline_s=1e-9)
    cand = ir.root_candidate(task, root=root)
    res, _ = ev.evaluate_full(task, cand, profile=True, noise_floor=True, is_root=True)
    assert res.correct and res.timing_valid, res.error
    samples = res.extra["baseline_samples"]
    assert len(samples) >= 1 and all(t > 0 for t in samples) and res.speedup == 1.0
    assert res.extra["timer"] == "candidate sandbox, timed alone" and "noise_floor" not in res.extra
    assert res.extra["checked_seeds"] == 2  # the root is the baseline's own program: seed 0 and a fresh one
    # a later evaluation: the candidate alone against the root's samples, no baseline arm at all
    honest = l2_candidate(task, root, HONEST, "reuse_honest")
    res2, _ = ev.evaluate_full(task, honest, reuse_baseline=samples)
    assert res2.correct and res2.extra["timed_alone"].startswith("unpaired"), res2.error
    assert res2.extra["checked_seeds"] == 4  # an agent's candidate: every seed, a poison run first
    assert res2.speedup and res2.t_baseline_s == pytest.approx(sorted(samples)[len(samples) // 2], rel=0.5)
    # the slow root's rule is off at 0: the same root is paired and states its A-vs-A
    off = sandbox_evaluator(tmp_path, reuse_baseline_s=0.0)
    res3, _ = off.evaluate_full(task, cand, noise_floor=True, is_root=True)
    assert "baseline_samples" not in res3.extra and res3.extra["noise_floor"]["source"] == "the root's own comparison"


def test_a_kernel_that_stops_computing_is_stale_when_timed_alone(task, root, tmp_path):
    """Timed alone there is no baseline worker to compare a timed call with: the judge runs the task's
    model on that call's inputs, and the stale output fails as it does when paired."""
    ev = sandbox_evaluator(tmp_path)
    res = ev.evaluate(task, l2_candidate(task, root, STOPS, "reuse_stops"))
    assert res.error_kind == "stale_output", (res.error_kind, res.error)
    res, _ = ev.evaluate_full(task, l2_candidate(task, root, STOPS, "reuse_stops2"), reuse_baseline=[1e-5, 1.1e-5])
    assert res.error_kind == "stale_output" and "timed alone" in res.error, (res.error_kind, res.error)


def test_the_export_of_a_judged_candidate_builds_without_a_second_check(task, root, tmp_path):
    ev = sandbox_evaluator(tmp_path)
    so = tmp_path / "best.so"
    res = ev.evaluate(task, ir.root_candidate(task, root=root), time_it=False, export=str(so), check=False)
    assert so.exists() and res.error_kind is None and res.extra["checked"] is False and not res.correct
    assert "check" in res.extra["phase_s"] and res.extra["phase_s"]["check"] < 0.05
    with pytest.raises(ValueError, match="check=False"):
        ev.evaluate_full(task, ir.root_candidate(task, root=root), check=False)


def test_the_unpaired_interval_covers_at_about_its_level():
    import numpy as np

    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(300):
        b = list(2e-3 * np.exp(rng.normal(0, 0.05, 4)))
        c = list(1e-3 * np.exp(rng.normal(0, 0.1, 6)))
        _, lo, hi = stats.ratio_interval(b, c)
        hits += lo <= 2.0 <= hi
    assert 0.9 <= hits / 300 <= 0.99, hits
    assert stats.ratio_interval([1.0], [0.5, 0.6])[1:] == (None, None)
