"""The suite metrics that oneshot and the experiment scripts share (benchmark.metrics)."""

import math

from benchmark.judge.stats import geomean
from benchmark.metrics import compile_at_1, correct_at_1, fast_at, geomean_speedup, summarize
from leka.core.types import EvalResult


def r(**kw) -> EvalResult:
    return EvalResult(task="t", **kw)


def test_fast_at_counts_all_tasks_and_only_trusted_timings():
    # faster = the lower bound of the speedup's interval above p (EvalResult.is_faster)
    rs = [r(compiled=True, correct=True, speedup=2.0, speedup_lo=1.9, speedup_hi=2.1, timing_valid=True),
          r(compiled=True, correct=True, speedup=3.0, speedup_lo=2.0, speedup_hi=4.5,
            timing_valid=False),  # noisy: not counted
          r(compiled=True, correct=False, speedup=5.0, speedup_lo=4.9, speedup_hi=5.1,
            timing_valid=True),  # wrong: not counted
          r(compiled=False)]
    assert fast_at(rs, 1.0) == 0.25 and fast_at(rs, 2.0) == 0.0
    assert compile_at_1(rs) == 0.75 and correct_at_1(rs) == 0.5
    assert geomean_speedup(rs) == 2.0
    s = summarize(rs)
    assert s["fast@1"] == 0.25 and s["fast@1_lo"] < 0.25 < s["fast@1_hi"]
    assert s["geomean_speedup"] == 2.0 and s["geomean_speedup_lo"] is None  # one task: no interval


def test_a_point_above_p_whose_interval_reaches_below_is_not_fast():
    both = r(compiled=True, correct=True, speedup=1.2, speedup_lo=0.95, speedup_hi=1.5, timing_valid=True)
    one_pair = r(compiled=True, correct=True, speedup=1.2, timing_valid=True)  # no interval: no evidence
    assert fast_at([both], 1.0) == 0.0 and fast_at([one_pair], 1.0) == 0.0 and fast_at([both], 0.9) == 1.0


def test_geomean_skips_missing_and_non_positive():
    assert math.isclose(geomean([2.0, 8.0, None, 0.0]), 4.0)
    assert geomean([None, -1.0]) is None and geomean([]) is None
