"""The report's figures (matplotlib, Agg), returned as inline SVG text with fixed ids and no date, so
a regenerated report.html is byte-identical for the same rows."""

from __future__ import annotations

import io
import math
import re
from typing import Any

from benchmark import judge


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "leka"  # deterministic element ids
    plt.rcParams["svg.fonttype"] = "none"
    return plt


def _svg(fig) -> str:
    plt = _plt()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)  # RDF boilerplate, nothing to show
    return text[text.index("<svg"):]


def fast_p(curves: dict[str, list[float]], ps: list[float], title: str, ref: str) -> str:
    """Fast@p vs p, one line per arm."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for arm, ys in curves.items():
        ax.step(ps, ys, where="post", label=arm)
    ax.axvline(1.0, color="grey", lw=0.6, ls=":")
    ax.set_xlabel(f"p (speedup threshold vs {ref})")
    ax.set_ylabel("Fast@p")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title)
    ax.legend(fontsize=7)
    return _svg(fig)


def anytime(series: dict[str, list[list[tuple[float, float]]]], title: str, grid: int = 60) -> str:
    """Geomean over jobs of the best speedup so far (vs the run baseline) against the fraction of the
    job's budget used. A job is at 1.0 until its first measured point."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    xs = [i / grid for i in range(grid + 1)]
    for arm, jobs in series.items():
        if not jobs:
            continue
        ys = []
        for x in xs:
            vals = []
            for pts in jobs:
                best = 1.0
                for t, s in pts:
                    if t <= x:
                        best = max(best, s)
                vals.append(best)
            ys.append(judge.geomean(vals) or 1.0)
        ax.plot(xs, ys, label=f"{arm} ({len(jobs)} jobs)")
    ax.set_xlabel("fraction of the wall-clock budget")
    ax.set_ylabel("best speedup so far (geomean)")
    ax.set_title(title)
    ax.legend(fontsize=7)
    return _svg(fig)


def time_memory(points: dict[str, list[tuple[float, float]]], title: str) -> str:
    """Relative time (candidate / the reference baseline) vs peak memory of each job's final candidate, with each
    arm's Pareto front (lower-left is better)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for arm, pts in points.items():
        if not pts:
            continue
        line = ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=14, label=arm)
        front, best_mem = [], math.inf
        for t, m in sorted(pts):
            if m < best_mem:
                front.append((t, m))
                best_mem = m
        ax.step([p[0] for p in front], [p[1] for p in front], where="post", color=line.get_facecolor()[0], lw=0.8)
    ax.set_xscale("log")
    # over a narrow range matplotlib labels every minor tick as "1.05 x 10^0" and they overprint
    from matplotlib.ticker import MaxNLocator, NullFormatter, NullLocator, ScalarFormatter

    lo, hi = ax.get_xlim()
    if hi / max(lo, 1e-12) < 10:  # within a decade: a few evenly spaced plain labels
        ax.xaxis.set_major_locator(MaxNLocator(6))
        ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("time relative to the reference (log; < 1 is faster)")
    ax.set_ylabel("peak memory (MiB)")
    ax.set_title(title)
    ax.legend(fontsize=7)
    return _svg(fig)


def jobs_points(rows: list[dict[str, Any]]) -> tuple[dict, dict]:
    """(anytime series by arm, time x memory points by arm) from result rows."""
    any_s: dict[str, list] = {}
    tm: dict[str, list] = {}
    for r in rows:
        budget = float(r.get("budget_s") or 0) or 1.0
        pts = [(min(1.0, float(t) / budget), float(s)) for t, s in (r.get("anytime") or [])]
        any_s.setdefault(r["arm"], []).append(pts)
        if r.get("correct") and r.get("t_candidate_s") and r.get("t_ref_s") and r.get("peak_memory_bytes"):
            tm.setdefault(r["arm"], []).append((r["t_candidate_s"] / r["t_ref_s"], r["peak_memory_bytes"] / 2**20))
    return any_s, tm
