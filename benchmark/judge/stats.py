"""Confidence intervals for paired speedups and for aggregates over tasks (issue 27: statistics, not a
spread gate). Pure Python + numpy, no tvm import.

The paired speedup's statistic is the geometric mean of the per-pair ratios t_base / t_cand, i.e. the
mean of the per-pair log-ratios. Why the mean of logs and not the median: with 3 to 15 pairs a bootstrap
of the median is a step function of a few order statistics (its interval jumps between data points and
under-covers), while the mean is smooth, so its resampling distribution is a good approximation already
at small n; logs make the ratio symmetric (a 2x speedup and a 2x slowdown are equally far from 1) and a
per-pair noise that is multiplicative additive. An outlier pair (a preempted run that the best-of-repeats
sample did not absorb) moves the mean more than it would move a median, but it also widens the interval,
so it shows up as less precision (more pairs, or an invalid timing), never as a confident wrong answer.

The interval is a percentile bootstrap over pairs (criterion.rs's method; 2000 resamples of the pairs,
seeded from the data itself, so the same timings always give the same interval), widened to at least
the Student-t interval of the mean log-ratio (pyperf's significance test is a t-test). The t interval
is the floor because a bootstrap cannot see past its data: with n pairs the resampled means never leave
[min, max] of the n log-ratios, which holds the true mean with probability at most 1 - 2 / 2^n (75% at
n = 3), and a percentile interval is narrower than that. The t interval is exact for normal log-ratios
at any n; the bootstrap adds width where the data are skewed or heavy-tailed. The hull of the two covers
at least as often as either.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

RESAMPLES = 2000
LEVEL = 0.95


def _seed(data: np.ndarray, salt: str = "") -> int:
    """A seed from the data's bytes: the same data always resample the same way (reproducible reports),
    different data do not share one stream of resamples."""
    h = hashlib.sha256(salt.encode() + np.ascontiguousarray(data, dtype=np.float64).tobytes())
    return int.from_bytes(h.digest()[:8], "little")


def _t_abs_cdf(t: float, nu: int) -> float:
    """P(|T| < t) for Student's t with an integer nu >= 1 degrees of freedom (Abramowitz & Stegun
    26.7.3 / 26.7.4: finite sums in theta = atan(t / sqrt(nu)); no scipy here)."""
    th = math.atan(t / math.sqrt(nu))
    c2, s = math.cos(th) ** 2, math.sin(th)
    if nu % 2 == 1:
        acc, term = 0.0, math.cos(th)  # cos theta + 2/3 cos^3 + (2 4)/(3 5) cos^5 + ... up to cos^(nu-2)
        for k in range(1, (nu - 1) // 2 + 1):
            acc += term
            term *= c2 * (2 * k) / (2 * k + 1)
        return (2 / math.pi) * (th + s * acc) if nu > 1 else 2 * th / math.pi
    acc, term = 0.0, 1.0  # 1 + 1/2 cos^2 + (1 3)/(2 4) cos^4 + ... up to cos^(nu-2)
    for k in range(1, nu // 2 + 1):
        acc += term
        term *= c2 * (2 * k - 1) / (2 * k)
    return s * acc


def t_quantile(level: float, nu: int) -> float:
    """The two-sided Student-t quantile: P(|T| < q) = level (bisection on the exact CDF; the normal
    quantile past 1000 degrees of freedom, where they differ by under 0.1%)."""
    if nu > 1000:
        return NormalDist().inv_cdf(0.5 + level / 2)
    lo, hi = 0.0, 1.0
    while _t_abs_cdf(hi, nu) < level:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_abs_cdf(mid, nu) < level else (lo, mid)
    return (lo + hi) / 2


def mean_interval(xs: Sequence[float], level: float = LEVEL, resamples: int = RESAMPLES,
                  salt: str = "") -> tuple[float, float | None, float | None]:
    """Mean of xs and its interval at `level`: the percentile bootstrap's, widened to at least the
    Student-t interval (the module's docstring says why). (mean, None, None) for fewer than 2 values."""
    x = np.asarray(xs, dtype=np.float64)
    n = len(x)
    if n == 0:
        return math.nan, None, None
    m = float(x.mean())
    if n < 2:
        return m, None, None
    half = t_quantile(level, n - 1) * float(x.std(ddof=1)) / math.sqrt(n)
    rng = np.random.default_rng(_seed(x, salt))
    boots = x[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    a = (1 - level) / 2
    blo, bhi = np.quantile(boots, [a, 1 - a])
    return m, min(m - half, float(blo)), max(m + half, float(bhi))


def speedup_interval(t_base: Sequence[float], t_cand: Sequence[float], level: float = LEVEL
                     ) -> tuple[float, float | None, float | None]:
    """The paired speedup (geometric mean over pairs of t_base / t_cand) and its `level` interval
    (lo, hi); (point, None, None) with one pair. Pairs where either time is not positive are dropped."""
    ratios = [b / c for b, c in zip(t_base, t_cand, strict=True) if b > 0 and c > 0]
    return geomean_interval(ratios, level, salt="pairs") or (math.nan, None, None)


def ratio_interval(t_base: Sequence[float], t_cand: Sequence[float], level: float = LEVEL
                   ) -> tuple[float, float | None, float | None]:
    """An unpaired speedup (issue 44: a slow baseline timed once, in the root's evaluation, and reused):
    exp(mean log t_base - mean log t_cand) with Welch's t interval on the logs (unequal variances, the
    Welch-Satterthwaite degrees of freedom rounded down); (point, None, None) with fewer than two times
    on either side. Wider than a paired interval of as many samples: drift between the two evaluations is
    in it only as far as each side's spread shows it, so a reused baseline is said so in the result."""
    b = np.log([t for t in t_base if t > 0])
    c = np.log([t for t in t_cand if t > 0])
    if len(b) == 0 or len(c) == 0:
        return math.nan, None, None
    d = float(b.mean() - c.mean())
    if len(b) < 2 or len(c) < 2:
        return math.exp(d), None, None
    vb, vc = float(b.var(ddof=1)) / len(b), float(c.var(ddof=1)) / len(c)
    se = math.sqrt(vb + vc)
    if se == 0:
        return math.exp(d), math.exp(d), math.exp(d)
    df = (vb + vc) ** 2 / ((vb ** 2) / (len(b) - 1) + (vc ** 2) / (len(c) - 1))
    q = t_quantile(level, max(1, int(df)))
    return math.exp(d), math.exp(d - q * se), math.exp(d + q * se)


def rel_width(lo: float | None, hi: float | None) -> float:
    """An interval's relative width hi / lo - 1 (inf without one): what the stopping rule and the
    validity bound compare."""
    if lo is None or hi is None or lo <= 0:
        return math.inf
    return hi / lo - 1


def geomean(xs: Sequence[float | None]) -> float | None:
    """Geometric mean of the positive values (None and non-positive ones are skipped; None if none left).
    The project's one geomean: `geomean_interval` gives it with an interval."""
    logs = [math.log(v) for v in xs if v and v > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def geomean_interval(xs: Sequence[float | None], level: float = LEVEL, salt: str = "tasks"
                     ) -> tuple[float, float | None, float | None] | None:
    """Geometric mean of positive values with a bootstrap-over-values interval (the same rule as a
    pair's, applied to the per-task point speedups: the spread between tasks is what the interval of
    a suite's geomean is about; each task's own timing noise is far smaller and is inside that spread).
    None when no positive value. `salt` keeps the resamples of different aggregates (pairs, tasks,
    ablation ratios) apart when their values happen to be equal."""
    logs = [math.log(v) for v in xs if v and v > 0]
    if not logs:
        return None
    m, lo, hi = mean_interval(logs, level, salt=salt)
    return math.exp(m), (math.exp(lo) if lo is not None else None), (math.exp(hi) if hi is not None else None)


def fmt_interval(point: float | None, lo: float | None, hi: float | None, unit: str = "x") -> str:
    """'1.53x [1.41, 1.66]'; the point alone without an interval; '-' without a point."""
    if point is None or (isinstance(point, float) and math.isnan(point)):
        return "-"
    s = f"{point:.2f}{unit}"
    return s + (f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else "")
