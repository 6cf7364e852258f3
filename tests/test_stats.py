"""The speedup's interval, the stopping rule, Fast@p with intervals, load detection and the reports that
show them (benchmark/judge/stats.py, benchmark/judge/load.py, benchmark/judge/timing.py paired_timing / record). Pure:
synthetic timers whose samples come from a seeded RNG, fake /proc/stat files, rows in memory; no kernel
is timed and no evaluator runs."""

from __future__ import annotations

import math
import random
import re

import numpy as np
import pytest

from benchmark.judge import load, stats, timing
from benchmark.metrics import fast_at, fast_at_interval, geomean_speedup_interval, summarize
from leka.core.config import EvaluatorConfig
from leka.core.types import EvalResult, is_faster


def _cfg(**kw) -> dict:
    return EvaluatorConfig(**kw).model_dump()


def _fixed(seconds: float, asked: list[int]) -> timing.Timer:
    """A timer of a program that takes `seconds` a call (it reports, it does not sleep)."""
    def sample(n: int) -> float:
        asked.append(n)
        return seconds
    return timing.Timer(sample, "fixed")


def _noisy(seconds: float, sd: float, rng: np.random.Generator) -> timing.Timer:
    """seconds x a lognormal factor per sample (multiplicative timing noise)."""
    return timing.Timer(lambda n: seconds * float(np.exp(rng.normal(0.0, sd))), "synthetic")


# --------------------------------------------------------------------------- the interval itself
def _pairs(ratio: float, n: int, sd: float, rng: np.random.Generator) -> tuple[list[float], list[float]]:
    tc = list(1e-3 * np.exp(rng.normal(0.0, sd, n)))
    tb = list(ratio * 1e-3 * np.exp(rng.normal(0.0, sd, n)))
    return tb, tc


@pytest.mark.parametrize("n", [4, 8, 15])
def test_the_interval_covers_the_true_ratio_at_about_the_nominal_rate(n):
    rng = np.random.default_rng(n)
    hits = 0
    for _ in range(200):
        tb, tc = _pairs(1.3, n, 0.05, rng)
        point, lo, hi = stats.speedup_interval(tb, tc)
        assert lo <= point <= hi
        hits += lo <= 1.3 <= hi
    assert 0.9 <= hits / 200 <= 0.99, hits


def test_the_interval_holds_on_skewed_noise():
    """Preemption-like noise: most samples clean, some 20-60% slower (a heavy right tail)."""
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(200):
        tc = [1e-3 * (1 + (rng.uniform(0.2, 0.6) if rng.random() < 0.15 else 0)) * math.exp(rng.normal(0, 0.02))
              for _ in range(15)]
        tb = [1.3e-3 * (1 + (rng.uniform(0.2, 0.6) if rng.random() < 0.15 else 0)) * math.exp(rng.normal(0, 0.02))
              for _ in range(15)]
        _, lo, hi = stats.speedup_interval(tb, tc)
        hits += lo <= 1.3 <= hi  # both arms are hit alike: the true ratio of the geomeans is 1.3
    assert 0.9 <= hits / 200 <= 1.0, hits


def test_the_interval_is_reproducible_and_one_pair_has_none():
    rng = np.random.default_rng(1)
    tb, tc = _pairs(1.1, 9, 0.05, rng)
    assert stats.speedup_interval(tb, tc) == stats.speedup_interval(list(tb), list(tc))
    point, lo, hi = stats.speedup_interval([2e-3], [1e-3])
    assert point == pytest.approx(2.0) and lo is None and hi is None
    assert stats.rel_width(None, None) == math.inf


def test_the_t_floor_matters_at_three_pairs():
    """Three close ratios: a bootstrap alone would give [min, max]; the t interval is wider."""
    logs = [0.0, 0.01, 0.02]
    _, lo, hi = stats.mean_interval(logs)
    assert lo < -0.01 and hi > 0.03  # 4.30 * 0.01 / sqrt(3) = 0.0248 around the mean 0.01; data in [0, 0.02]
    assert stats.t_quantile(0.95, 2) == pytest.approx(4.3027, abs=1e-3)
    assert stats.t_quantile(0.95, 14) == pytest.approx(2.1448, abs=1e-3)
    assert stats.t_quantile(0.95, 5000) == pytest.approx(1.95996, abs=1e-3)


def test_lower_bound_above_one_for_a_clear_speedup_not_for_a_a():
    rng = np.random.default_rng(3)
    tb, tc = _pairs(1.3, 15, 0.05, rng)
    assert stats.speedup_interval(tb, tc)[1] > 1.0
    false_fast = 0
    for _ in range(200):
        tb, tc = _pairs(1.0, 15, 0.05, rng)
        _, lo, hi = stats.speedup_interval(tb, tc)
        false_fast += lo > 1.0
    assert false_fast / 200 <= 0.05, false_fast  # one-sided 2.5% nominal


def test_geomean_interval_over_tasks():
    g, lo, hi = stats.geomean_interval([1.2, 1.5, 1.8, 0.9, 1.1])
    assert lo < g < hi and g == pytest.approx((1.2 * 1.5 * 1.8 * 0.9 * 1.1) ** 0.2)
    assert stats.geomean_interval([None, 0.0]) is None
    assert stats.geomean([1.2, 1.5, 1.8, 0.9, 1.1, None, 0.0]) == pytest.approx(g, rel=1e-12)  # one geomean
    assert stats.fmt_interval(1.534, 1.41, 1.664) == "1.53x [1.41, 1.66]"
    assert stats.fmt_interval(1.5, None, None) == "1.50x" and stats.fmt_interval(None, None, None) == "-"


# --------------------------------------------------------------------------- paired_timing: plan and stop
# 100 s: 15 pairs fit, but 3 identical ratios already have an interval of width 0, so timing stops there
@pytest.mark.parametrize(("budget", "pairs", "limited"), [(4.0, 1, True), (12.0, 2, True), (100.0, 3, False)])
def test_a_slow_program_gets_the_pairs_its_budget_allows(budget, pairs, limited):
    asked: list[int] = []
    cfg = _cfg(timing_budget_s=budget)  # min_pairs 3, max_pairs 15
    tm = timing.paired_timing(_fixed(2.0, asked), _fixed(3.0, asked), cfg)
    assert (tm["pairs"], tm["limited"]) == (pairs, limited)
    assert set(asked) == {1} and len(asked) == 2 + 2 * pairs  # warm-up, then one call per sample
    assert tm["speedup"] == pytest.approx(1.5) and tm["number"] == [1, 1] and tm["repeats"] == [1, 1]
    res = EvalResult(task="t", correct=True)
    timing.record(res, tm)
    assert res.n_pairs == pairs and res.timing_valid and res.error_kind is None
    if pairs == 1:
        assert res.timing_spread is None and res.speedup_lo is None and res.speedup_hi is None
        assert "no interval (one pair)" in res.extra["timing_limited"]
        assert not res.is_faster(1.0)  # one pair is no evidence of being faster
    else:
        assert res.timing_spread == 0.0 and res.speedup_lo == pytest.approx(1.5) and res.is_faster(1.0)
    assert ("timing_limited" in res.extra) == limited


def test_a_fast_program_keeps_min_pairs_in_a_tiny_budget():
    asked: list[int] = []
    tm = timing.paired_timing(_fixed(1e-4, asked), _fixed(2e-4, asked), _cfg(timing_budget_s=0.001))
    assert tm["pairs"] == 3 and not tm["limited"] and tm["spread"] == 0.0
    assert tm["number"] == [100, 50] and tm["repeats"] == [3, 3]


def test_narrow_data_stops_early_and_is_faster():
    rng = np.random.default_rng(11)
    cfg = _cfg(timing_budget_s=100.0)
    tm = timing.paired_timing(_noisy(1e-3, 0.005, rng), _noisy(1.3e-3, 0.005, rng), cfg)
    assert cfg["min_pairs"] <= tm["pairs"] < cfg["max_pairs"] and tm["ci_width"] <= cfg["ci_width"]
    res = EvalResult(task="t", correct=True)
    timing.record(res, tm)
    assert res.timing_valid and res.error_kind is None and res.is_faster(1.0) and is_faster(res, 1.2)
    assert res.speedup_lo < res.speedup < res.speedup_hi and res.speedup == pytest.approx(1.3, rel=0.02)


def test_noisy_data_runs_to_max_pairs_and_is_invalid():
    rng = np.random.default_rng(12)
    cfg = _cfg(timing_budget_s=100.0)
    tm = timing.paired_timing(_noisy(1e-3, 0.5, rng), _noisy(1e-3, 0.5, rng), cfg)
    assert tm["pairs"] == cfg["max_pairs"] == 15 and tm["ci_width"] > cfg["max_ci_width"]
    res = EvalResult(task="t", correct=True)
    timing.record(res, tm)
    assert not res.timing_valid and res.error_kind == "timing_invalid" and "evaluator.max_ci_width" in res.error
    assert res.correct and not res.is_faster(1.0) and res.timing_spread is not None  # spread still reported


def test_ci_width_zero_never_stops_early():
    tm = timing.paired_timing(_fixed(1e-3, []), _fixed(2e-3, []), _cfg(timing_budget_s=100.0, ci_width=0.0))
    assert tm["pairs"] == 15


def test_a_a_over_many_synthetic_evaluations_is_rarely_faster():
    """The early stop looks at the interval's width, never at its position: A/A stays at the nominal
    one-sided rate though every evaluation may stop at a different pair count."""
    rng = np.random.default_rng(13)
    cfg = _cfg(timing_budget_s=100.0)
    fast = 0
    for _ in range(100):
        sd = float(rng.choice([0.005, 0.02, 0.05]))
        res = EvalResult(task="t", correct=True)
        timing.record(res, timing.paired_timing(_noisy(1e-3, sd, rng), _noisy(1e-3, sd, rng), cfg, probe_load=False))
        fast += res.is_faster(1.0)
    assert fast <= 5, fast


def test_retired_spread_keys_still_load():
    c = EvaluatorConfig.model_validate({"max_spread": 0.1, "settle_spread": 0.03, "settle_pairs": 7, "max_pairs": 9})
    assert c.max_pairs == 9 and "max_spread" not in c.model_dump() and c.ci_width == 0.06
    with pytest.raises(ValueError):
        EvaluatorConfig.model_validate({"no_such_key": 1})


# --------------------------------------------------------------------------- Fast@p and geomeans
def _res(sp: float, lo: float | None, hi: float | None, valid: bool = True, loaded: bool = False) -> EvalResult:
    return EvalResult(task="t", compiled=True, correct=True, speedup=sp, speedup_lo=lo, speedup_hi=hi,
                      timing_valid=valid, extra={"machine_load": {"loaded": loaded}})


def test_fast_at_with_intervals():
    rs = [_res(1.5, 1.3, 1.7), _res(1.2, 0.95, 1.5), _res(2.5, 2.2, 2.8, loaded=True), _res(3.0, 1.0, 9.0, valid=False)]
    assert fast_at(rs, 1.0) == 0.5 and fast_at(rs, 1.2) == 0.5 and fast_at(rs, 1.4) == 0.25
    p, lo, hi = fast_at_interval(rs, 1.0)
    assert p == 0.5 and 0.0 < lo < 0.5 < hi < 1.0
    assert fast_at_interval([], 1.0) is None
    g, glo, ghi = geomean_speedup_interval(rs)
    assert g == pytest.approx((1.5 * 1.2 * 2.5) ** (1 / 3)) and glo < g < ghi
    assert summarize(rs)["loaded"] == 1.0


# --------------------------------------------------------------------------- load detection
def _stat(tmp_path, name: str, user: int, system: int, steal: int) -> str:
    p = tmp_path / name
    p.write_text(f"cpu  {user} 0 {system} 5000 10 0 0 {steal} 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    return str(p)


def test_machine_cpu_reads_proc_stat_and_none_without_it(tmp_path):
    tick = load._tick()
    busy, steal = load.machine_cpu(_stat(tmp_path, "s", 100, 50, 7))
    assert busy == pytest.approx(150 * tick) and steal == pytest.approx(7 * tick)
    assert load.machine_cpu(str(tmp_path / "absent")) is None
    (tmp_path / "junk").write_text("nonsense\n")
    assert load.machine_cpu(str(tmp_path / "junk")) is None
    assert load.start(str(tmp_path / "absent")) is None and load.finish(None, 0.25) is None


def test_other_processes_cpu_marks_a_timing_loaded():
    a = load.Snapshot(wall=0.0, busy=10.0, steal=0.0, own=1.0)
    quiet = load.judge(a, load.Snapshot(wall=4.0, busy=14.2, steal=0.0, own=5.0), 0.25)  # 0.2 s by others
    assert not quiet["loaded"] and quiet["other_cpu_s"] == pytest.approx(0.2) and quiet["own_cpu_s"] == 4.0
    busy = load.judge(a, load.Snapshot(wall=4.0, busy=18.0, steal=0.0, own=5.0), 0.25)  # a core held by another
    assert busy["loaded"] and busy["other_cpu_s"] == pytest.approx(4.0)
    stolen = load.judge(a, load.Snapshot(wall=4.0, busy=14.0, steal=1.5, own=5.0), 0.25)
    assert stolen["loaded"] and stolen["steal_s"] == pytest.approx(1.5) and stolen["other_cpu_s"] == 0.0
    tiny = load.judge(a, load.Snapshot(wall=0.1, busy=10.04, steal=0.0, own=1.0), 0.25)  # under 5 ticks
    assert not tiny["loaded"]


def test_paired_timing_records_the_machine_load(monkeypatch):
    snaps = iter([load.Snapshot(0.0, 10.0, 0.0, 1.0), load.Snapshot(2.0, 14.0, 0.0, 3.0)])
    monkeypatch.setattr(load, "start", lambda path=load.STAT: next(snaps))
    monkeypatch.setattr(load, "finish", lambda snap, share, path=load.STAT: snap and load.judge(snap, next(snaps), share))
    tm = timing.paired_timing(_fixed(1e-3, []), _fixed(2e-3, []), _cfg(timing_budget_s=1.0))
    res = EvalResult(task="t", correct=True)
    timing.record(res, tm)
    assert res.extra["machine_load"]["loaded"] and res.loaded and res.extra["machine_load"]["other_cpu_s"] == 2.0
    assert res.error_kind is None  # reported, not failed: the interval carries the noise
    off = timing.paired_timing(_fixed(1e-3, []), _fixed(2e-3, []), _cfg(timing_budget_s=1.0), probe_load=False)
    assert off["machine_load"] is None


# --------------------------------------------------------------------------- reports
def _row(job: str, arm: str, task: str, sp: float | None, lo: float | None = None, hi: float | None = None,
         valid: bool = True, loaded: bool = False) -> dict:
    return {"job_id": job, "backend": "llvm", "level": 1, "arm": arm, "task_label": task, "seed": 0,
            "compiled": sp is not None, "correct": sp is not None, "speedup_ref": sp, "speedup_ref_lo": lo,
            "speedup_ref_hi": hi, "timing_valid_ref": valid, "loaded_ref": loaded, "evaluations": 3}


def _grid():
    from leka.exp.report import Data

    rng = random.Random(0)
    rows = []
    for i in range(6):
        s = 1.5 + 0.1 * i
        rows.append(_row(f"leka-{i}", "leka", f"t{i}", s, s * 0.92, s * 1.08, loaded=i == 0))
        a = s * rng.uniform(0.9, 1.1)  # an ablation that is indistinguishable from leka
        rows.append(_row(f"abl-{i}", "l2_off", f"t{i}", a, a * 0.92, a * 1.08))
    rows.append(_row("leka-6", "leka", "t6", 1.53, 1.41, 1.66, valid=False))
    cfg = {"name": "synthetic", "arms": [{"name": "leka"}, {"name": "l2_off"}], "baseline": {"tuned_trials": 0}}
    return Data.from_rows("/tmp/none", rows, cfg)


def test_grid_report_shows_intervals_loaded_jobs_and_zero_including_deltas():
    from leka.exp.report import markdown

    md = markdown(_grid())
    assert "1.53x [1.41, 1.66]?" in md  # the job table: interval, untrusted mark
    assert "(loaded)" in md and "1 of 13 jobs" in md
    assert "CI includes 0: no evidence of a difference" in md
    t1 = [ln for ln in md.splitlines() if ln.startswith("| 1 | leka |")][0]
    assert re.search(r"\d\.\d\dx \[\d\.\d\d, \d\.\d\d\]", t1) and t1.rstrip().endswith("| 1 |")  # geomean CI, loaded


def test_grid_report_html_shows_intervals():
    from leka.exp.report import html_report

    page = html_report(_grid())
    assert "1.53x [1.41, 1.66]?" in page and "lower bound is above p" in page


def test_run_report_shows_the_interval_and_loaded_evaluations():
    from leka.report import render_report

    summary = {"task": "t", "backend": "llvm", "best_node": 3, "best_speedup": 1.534, "best_speedup_lo": 1.41,
               "best_speedup_hi": 1.664, "best_faster": True, "best_loaded": True, "baseline": "untuned TVM",
               "best_correct": True, "nodes_total": 4, "nodes_by_level": {"L0": 1}, "nodes_by_status": {},
               "budget_used_s": 10.0, "budget_s": 60.0, "evaluations": 4, "stop_reason": "", "policy": "rule",
               "routing": "hw", "layers": ["L0"], "seed": 0, "timed_evaluations": 4, "loaded_evaluations": 2,
               "ci_level": 0.95}
    class NoNodes:
        def nodes(self):
            return []

    text = render_report(summary, NoNodes(), None, None, None)
    assert "1.53x [1.41, 1.66]" in text and "lower bound above 1: True" in text
    assert "2 of 4 timed evaluations" in text and "timed on a loaded machine" in text



# --------------------------------------------------------------------------- issue 44: stops that save budget
def test_a_candidate_decided_slower_than_its_parent_stops_early_and_is_valid():
    rng = np.random.default_rng(21)
    cfg = {**_cfg(timing_budget_s=100.0, ci_width=0.0), "decide_below": 2.0}  # the parent: 2.0x
    tm = timing.paired_timing(_noisy(1e-3, 0.05, rng), _noisy(1e-3, 0.05, rng), cfg, probe_load=False)
    assert tm["stop"] == "decided" and tm["pairs"] < cfg["max_pairs"] and tm["decided_below"] == 2.0
    res = EvalResult(task="t", correct=True)
    timing.record(res, tm)
    assert res.timing_valid and res.extra["timing_stop"] == "decided" and res.extra["decided_below"] == 2.0
    # without a parent to beat the same data run to max_pairs (ci_width 0: no width stop)
    rng = np.random.default_rng(21)
    tm = timing.paired_timing(_noisy(1e-3, 0.05, rng), _noisy(1e-3, 0.05, rng), {**cfg, "decide_below": None},
                              probe_load=False)
    assert tm["stop"] == "planned" and tm["pairs"] == cfg["max_pairs"]


def test_decided_below_keeps_its_error_rate_despite_looking_after_every_pair():
    """A candidate exactly as fast as its parent is wrongly decided slower in at most the nominal 5% of
    evaluations (the Bonferroni split over the looks), and one faster than it never stops on a decision."""
    rng = np.random.default_rng(22)
    wrong = faster_stopped = 0
    for _ in range(200):
        sd = float(rng.choice([0.01, 0.05, 0.2]))
        cfg = {**_cfg(timing_budget_s=100.0, ci_width=0.0), "decide_below": 1.5}
        tm = timing.paired_timing(_noisy(1e-3, sd, rng), _noisy(1.5e-3, sd, rng), cfg, probe_load=False)
        wrong += tm["stop"] == "decided"
        tm = timing.paired_timing(_noisy(1e-3, sd, rng), _noisy(2e-3, sd, rng), cfg, probe_load=False)
        faster_stopped += tm["stop"] == "decided"
    assert wrong <= 10 and faster_stopped == 0, (wrong, faster_stopped)


def test_the_timing_ends_on_its_wall_clock_not_on_the_plan():
    """The plan comes from single calls; where a sample costs more than that (a sandboxed request checks
    and fills around its calls), the budget's wall clock still ends the pairs (after min_pairs)."""
    import time

    calls = {"n": 0}

    def sample(n: int) -> float:
        calls["n"] += 1
        if calls["n"] > 2:  # the planning calls are cheap; every later sample costs 20 ms of wall time
            time.sleep(0.02)
        return 1e-3 * (1.0 + 0.3 * random.random())

    cfg = _cfg(timing_budget_s=0.5, ci_width=0.0)
    t0 = time.perf_counter()
    tm = timing.paired_timing(timing.Timer(sample, "s"), timing.Timer(sample, "s"), cfg, probe_load=False)
    wall = time.perf_counter() - t0
    assert tm["stop"] == "budget" and cfg["min_pairs"] <= tm["pairs"] < cfg["max_pairs"]
    assert wall < 0.5 + 0.2  # at most one pair (6 samples of 20 ms) past the budget
