"""The suite metrics that oneshot and the experiment scripts share (benchmark.metrics)."""

import math

from benchmark.metrics import compile_at_1, correct_at_1, fast_at, geomean, geomean_speedup, summarize
from leka.core.types import EvalResult


def r(**kw) -> EvalResult:
    return EvalResult(task="t", **kw)


def test_fast_at_counts_all_tasks_and_only_trusted_timings():
    rs = [r(compiled=True, correct=True, speedup=2.0, timing_valid=True),
          r(compiled=True, correct=True, speedup=3.0, timing_valid=False),  # noisy: not counted
          r(compiled=True, correct=False, speedup=5.0, timing_valid=True),  # wrong: not counted
          r(compiled=False)]
    assert fast_at(rs, 1.0) == 0.25 and fast_at(rs, 2.0) == 0.0
    assert compile_at_1(rs) == 0.75 and correct_at_1(rs) == 0.5
    assert geomean_speedup(rs) == 2.0
    assert summarize(rs)["fast@1"] == 0.25


def test_geomean_skips_missing_and_non_positive():
    assert math.isclose(geomean([2.0, 8.0, None, 0.0]), 4.0)
    assert geomean([None, -1.0]) is None and geomean([]) is None
