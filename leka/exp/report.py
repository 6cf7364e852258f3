"""EXP_DIR/report.md and a self-contained EXP_DIR/report.html (figures as inline SVG), computed only
from results.sqlite rows (and the anytime points stored in them): regenerating gives the same numbers.

Conventions (EdgeKernelBench, benchmark/metrics.py): rates divide by every job of the cell, so a
job whose arm produced nothing correct counts against it. A job is "fast" (Fast@p) only when the lower
bound of its speedup's interval is above p (benchmark/judge/stats.py: the evaluator's paired timing). The
geomean speedup counts every job: a correct, validly timed one with its speedup (slowdowns below 1
included), any other as FAIL_SPEEDUP = 1 (the user keeps the baseline). Intervals over tasks (geomeans,
ratios, ablation deltas) resample tasks (`stats.mean_interval`: percentile bootstrap, at least the
Student-t interval, seeded from the data), so regenerating gives the same numbers. Jobs whose timing
ran on a loaded machine (other processes' CPU or steal time) are counted per cell.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmark import judge
from leka.core.levels import level_names
from leka.exp.store import Store
from profilers.roof import fmt_fraction, fmt_sol

FAST_PS = [round(0.1 * i, 1) for i in range(41)]  # Fast@p curve, p in [0, 4]
FAIL_SPEEDUP = 1.0  # what a failed job contributes to the geomean: the user keeps the baseline
BOOT = judge.RESAMPLES


def _suffix(key: str) -> str:
    return "ref" if key == "speedup_ref" else "torch"


def _sp(r: dict[str, Any], key: str = "speedup_ref") -> float | None:
    ok = r.get("correct") and r.get(key) and r.get(f"timing_valid_{_suffix(key)}")
    return float(r[key]) if ok else None


def _lo(r: dict[str, Any], key: str = "speedup_ref") -> float | None:
    """The lower bound of a trusted speedup's interval (None: untrusted, failed, or no interval: one pair,
    or a row written before intervals)."""
    return r.get(f"{key}_lo") if _sp(r, key) is not None else None


def _fast(r: dict[str, Any], p: float, key: str = "speedup_ref") -> bool:
    lo = _lo(r, key)
    return lo is not None and lo > p


def _loaded(r: dict[str, Any]) -> bool:
    return bool(r.get("loaded_ref") or r.get("loaded_torch"))


def _geo(xs: Sequence[float]) -> tuple[float, float | None, float | None] | None:
    return judge.geomean_interval(xs)


def cell_metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    if not n:
        return {"n": 0}
    sp = [_sp(r) for r in rows]
    spt = [_sp(r, "speedup_torch") for r in rows]
    g, gt = _geo([s or FAIL_SPEEDUP for s in sp]), _geo([s or FAIL_SPEEDUP for s in spt])
    return {"n": n, "compile": sum(bool(r.get("compiled")) for r in rows) / n,
            "correct": sum(bool(r.get("correct")) for r in rows) / n,
            "fast1": sum(_fast(r, 1.0) for r in rows) / n,
            "geo_ref": g[0] if g else None, "geo_ref_ci": g,
            "geo_torch": gt[0] if gt else None, "geo_torch_ci": gt,
            "loaded": sum(_loaded(r) for r in rows),
            # the measured roof (profilers/roof.py), medians over the jobs that have one
            "roof": _median([r.get("roof_fraction") for r in rows if r.get("correct")]),
            "sol": _median([r.get("sol_ref") for r in rows if r.get("correct")]),
            "fast_curve": [sum(_fast(r, p) for r in rows) / n for p in FAST_PS]}


def _median(xs: Sequence[float | None]) -> float | None:
    vals = sorted(float(x) for x in xs if x is not None)
    if not vals:
        return None
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2


def _fmt(x: float | None, pct: bool = False) -> str:
    if x is None:
        return "-"
    return f"{100 * x:.0f}%" if pct else f"{x:.2f}x"


def _fmt_ci(ci: tuple[float, float | None, float | None] | None) -> str:
    return judge.fmt_interval(*ci) if ci else "-"


def _raw(r: dict[str, Any], key: str) -> str:
    """A job's speedup as measured, with its interval; '?' marks one whose timing was too noisy to count
    (not in any metric), '(loaded)' one timed while other processes used the machine."""
    v = r.get(key)
    if not v or not r.get("correct"):
        return "-"
    valid = r.get(f"timing_valid_{_suffix(key)}")
    loaded = " (loaded)" if r.get(f"loaded_{_suffix(key)}") else ""
    return judge.fmt_interval(v, r.get(f"{key}_lo"), r.get(f"{key}_hi")) + ("" if valid else "?") + loaded


def _rel(exp_dir: Path, r: dict[str, Any]) -> str:
    return r.get("run_dir") or r.get("attempt_dir") or ""


def bootstrap_ratio(pairs: list[tuple[float, float]]) -> tuple[float, float, float] | None:
    """Geomean of a/b over tasks, with a 95% interval over tasks of the paired per-task log-ratios
    log a - log b (`stats.geomean_interval`: bootstrap, at least the t interval; seeded from the data).
    A single task has no interval: its bounds are the point."""
    g = judge.geomean_interval([a / b for a, b in pairs], salt="ablation")
    if g is None:
        return None
    m, lo, hi = g
    return (m, m, m) if lo is None or hi is None else (m, lo, hi)


def reference_label(trials: int) -> str:
    return f"MetaSchedule-tuned TVM ({trials} trials)" if trials else "untuned TVM"


class Data:
    def __init__(self, exp_dir: Path):
        import yaml

        st = Store(exp_dir)
        try:
            rows = st.results()
            total = st.conn.execute("SELECT count(*) FROM jobs").fetchone()[0]
        finally:
            st.close()
        self._index(exp_dir, rows, total, yaml.safe_load((exp_dir / "experiment.yaml").read_text()))

    @classmethod
    def from_rows(cls, exp_dir: Path, rows: list[dict[str, Any]], cfg: dict[str, Any],
                  total: int | None = None) -> Data:
        """From rows and an experiment config in memory (tests; the rows as judge.execute writes them)."""
        d = cls.__new__(cls)
        d._index(Path(exp_dir), rows, len(rows) if total is None else total, cfg)
        return d

    def _index(self, exp_dir: Path, rows: list[dict[str, Any]], total: int, cfg: dict[str, Any]) -> None:
        self.exp_dir = exp_dir
        self.rows, self.total, self.cfg = rows, total, cfg
        self.arms = [a["name"] for a in self.cfg["arms"]]
        self.trials = self.cfg["baseline"]["tuned_trials"]
        self.ref = reference_label(self.trials)
        self.cells: dict[tuple[str, Any, str], list[dict]] = defaultdict(list)
        for r in self.rows:
            self.cells[(r["backend"], r.get("level"), r["arm"])].append(r)
        self.backends = sorted({r["backend"] for r in self.rows})
        self.levels = sorted({r.get("level") for r in self.rows}, key=lambda x: (x is None, x or 0))
        self.ref_arm = next((a for a in self.arms if a == "leka"), self.arms[0] if self.arms else None)

    def by_task(self, backend: str, arm: str) -> dict[str, dict]:
        return {(r["task_label"], r["seed"]): r for r in self.rows if r["backend"] == backend and r["arm"] == arm}

    def ratios(self, backend: str, level, arm: str) -> tuple[float, float, float] | None:
        """ref arm / arm per task (failed side counted as FAIL_SPEEDUP), geomean + bootstrap CI."""
        a, b = self.by_task(backend, self.ref_arm), self.by_task(backend, arm)
        pairs = [((_sp(a[k]) or FAIL_SPEEDUP), (_sp(b[k]) or FAIL_SPEEDUP)) for k in sorted(set(a) & set(b))
                 if level is None or a[k].get("level") == level]
        return bootstrap_ratio(pairs)


# --------------------------------------------------------------------------------------- markdown
def _cell_id(backend: str, level, arm: str) -> str:
    return f"cell-{backend}-L{level}-{arm}"


def table1(d: Data, link) -> list[str]:
    """Rows of the paper's Table 1, per backend: level x arm. `link(text, href)` renders a link."""
    out = []
    for b in d.backends:
        out += [f"### Table 1: {b} (reference: {d.ref}; beside it: PyTorch eager)", "",
                f"| level | arm | jobs | Compile@1 | Correct@1 | Fast@1.0 vs {d.ref} | geomean vs {d.ref} "
                "| geomean vs PyTorch eager | fraction of roof (median) | SOL score vs the reference (median) "
                "| loaded |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for lv in d.levels:
            for arm in d.arms:
                rows = d.cells.get((b, lv, arm), [])
                if not rows:
                    continue
                m = cell_metrics(rows)
                href = f"#{_cell_id(b, lv, arm)}"
                vals = [_fmt(m["compile"], True), _fmt(m["correct"], True), _fmt(m["fast1"], True),
                        _fmt_ci(m["geo_ref_ci"]), _fmt_ci(m["geo_torch_ci"]), fmt_fraction(m["roof"]),
                        fmt_sol(m["sol"])]
                out.append(f"| {lv if lv is not None else '?'} | {arm} | {m['n']} | "
                           + " | ".join(link(v, href) for v in vals) + f" | {m['loaded']} |")
        out.append("")
    return out


def row_class(r: dict[str, Any]) -> str | None:
    """A row's failure class (leka.core.failures); classified from its error for rows written before the field."""
    from leka.core.failures import classify

    if r.get("correct"):
        return None
    return r.get("failure_class") or classify(r.get("error_kind"), r.get("error"))


def failure_table(d: Data) -> list[str]:
    """The failure taxonomy per backend x arm: failed jobs by class, with their share of the failures."""
    from leka.core.failures import FAILURE_CLASSES, LABELS

    out = ["### Failures by class (leka.core.failures, decided from each failed job's build and runtime errors)", "",
           "| backend | arm | failed jobs | " + " | ".join(LABELS[c] for c in FAILURE_CLASSES) + " |",
           "|---|---|---|" + "---|" * len(FAILURE_CLASSES)]
    for b in d.backends:
        for arm in d.arms:
            got = [row_class(r) for r in d.rows if r["backend"] == b and r["arm"] == arm]
            failed = [c for c in got if c]
            if not got:
                continue
            cells = [f"{failed.count(c)} ({100 * failed.count(c) / len(failed):.0f}%)" if failed.count(c) else "0"
                     for c in FAILURE_CLASSES]
            out.append(f"| {b} | {arm} | {len(failed)} of {len(got)} | " + " | ".join(cells) + " |")
    return out + [""]


def ratio_table(d: Data) -> list[str]:
    if d.ref_arm is None:
        return []
    out = [f"### {d.ref_arm} / arm, per level (geomean over tasks of the speedup ratio vs {d.ref}; "
           f"95% CI over tasks of the paired per-task log-ratios: bootstrap, {BOOT} resamples, at least the "
           "t interval)", "",
           "| backend | level | arm | ratio | CI | ablation delta (arm vs " + d.ref_arm + ") | note |",
           "|---|---|---|---|---|---|---|"]
    for b in d.backends:
        for lv in [*d.levels, None]:
            for arm in d.arms:
                if arm == d.ref_arm:
                    continue
                r = d.ratios(b, lv, arm)
                if r is None:
                    continue
                g, lo, hi = r
                delta = f"{100 * (1 / g - 1):+.0f}% [{100 * (1 / hi - 1):+.0f}%, {100 * (1 / lo - 1):+.0f}%]"
                note = "CI includes 0: no evidence of a difference" if lo <= 1.0 <= hi else ""
                out.append(f"| {b} | {lv if lv is not None else 'all'} | {arm} | {g:.2f} | [{lo:.2f}, {hi:.2f}] "
                           f"| {delta} | {note} |")
    return out + [""]


def _cost(r: dict) -> str:
    """The row's dollars; "unpriced" when a model answered and no price was known (leka.exp.records)."""
    c = r.get("cost_usd", 0.0)
    return "unpriced" if c is None else f"${c:.4f}"


def _nf(r: dict[str, Any]) -> dict[str, Any] | None:
    nf = r.get("noise_floor_ref")
    return nf if isinstance(nf, dict) and nf.get("speedup") else None


def noise_floor_table(d: Data) -> list[str]:
    """The machine's noise floor per backend: in every judged evaluation the reference was also timed
    against itself by the same protocol (benchmark/judge/timing.py noise_floor); what those A-vs-A ratios and
    intervals look like is what "no difference" looks like in this grid's numbers."""
    out = [f"### Noise floor: {d.ref} timed against itself in each judged evaluation (A-vs-A)", "",
           "| backend | jobs with an A-vs-A | median A-vs-A | median interval width | intervals holding 1.00 "
           "| points in [0.97, 1.03] | extremes |", "|---|---|---|---|---|---|---|"]
    for b in d.backends:
        nfs = [nf for r in d.rows if r["backend"] == b and (nf := _nf(r))]
        if not nfs:
            out.append(f"| {b} | 0 | - | - | - | - | - |")
            continue
        pts = sorted(float(nf["speedup"]) for nf in nfs)
        with_ci = [nf for nf in nfs if nf.get("lo") is not None and nf.get("hi") is not None]
        holds = sum(1 for nf in with_ci if nf["lo"] <= 1.0 <= nf["hi"])
        widths = [float(nf["width"]) for nf in with_ci if nf.get("width") is not None]
        out.append(f"| {b} | {len(nfs)} | {_median(pts):.3f}x | {fmt_fraction(_median(widths))} "
                   f"| {holds} of {len(with_ci)} | {sum(0.97 <= x <= 1.03 for x in pts)} of {len(pts)} "
                   f"| {pts[0]:.3f}x, {pts[-1]:.3f}x |")
    return out + [""]


def timers_line(d: Data) -> str:
    """How the judged evaluations called each arm (EvalResult.extra["timer"]: a sandboxed worker process
    per arm, or the in-process loops), with counts: each engine's threads in a process of its own, its
    OpenMP pool waiting passively (benchmark/judge/sandbox/worker.py), never spinning against the other's."""
    seen: dict[str, int] = {}
    for r in d.rows:
        for key, who in (("timer_ref", d.ref), ("timer_torch", "PyTorch eager")):
            if r.get(key):
                k = f"vs {who}: {r[key]}"
                seen[k] = seen.get(k, 0) + 1
    if not seen:
        return ""
    return ("How each pair was timed (jobs): " + "; ".join(f"{k} ({n})" for k, n in seen.items())
            + ". A sandbox worker is a process of its own per arm, its OpenMP threads waiting passively "
              "(OMP_WAIT_POLICY=PASSIVE) and stopped between requests, so no engine's pool spins against the other's.")


def platform_audit(d: Data) -> list[str]:
    """The platform each judged timing ran on (benchmark/judge/machine_state.py: governor, turbo, SMT,
    frequency before -> after, steal, GPU clocks), how many moved while they timed, and the jobs marked
    for audit (benchmark/judge/audit.py) or timed under the physical floor (benchmark/judge/floor.py)."""
    from benchmark.judge import platform_line as line

    out = ["### Platform and audit", ""]
    for b in d.backends:
        plats = [p for r in d.rows if r["backend"] == b for p in (r.get("platform_ref"), r.get("platform_torch")) if p]
        seen: dict[str, int] = {}
        for p in plats:
            k = line({**p, "moved": None})
            seen[k] = seen.get(k, 0) + 1
        moved = [p["moved"] for p in plats if p.get("moved")]
        out.append(f"- {b} platform: " + ("; ".join(f"{k} ({n} timings)" for k, n in seen.items()) or "not recorded")
                   + f"; moved during {len(moved)} of {len(plats)} timings" + (f" ({moved[0]}, ...)" if moved else ""))
    for r in sorted(d.rows, key=lambda r: r["job_id"]):
        why = [*(r.get("audit_ref") or []), *(r.get("audit_torch") or [])]
        if r.get("error_kind") == "below_physical_floor":
            why.append("below the physical floor: " + (r.get("error") or "")[:160])
        if why:
            out.append(f"- AUDIT {r['job_id']}: " + "; ".join(why))
    return out + [""]


def job_rows(d: Data, link) -> list[str]:
    levels = level_names()
    out = ["### Jobs", "", f"| job | level | correct | vs {d.ref} | A-vs-A | vs PyTorch eager | roof | SOL | evals "
           f"| nodes {'/'.join(levels)} | LLM calls | tokens in/out | cost | budget used | wall | error |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(d.rows, key=lambda r: r["job_id"]):
        href = _rel(d.exp_dir, r)
        nb = r.get("nodes_by_level") or {}
        nf = _nf(r)
        aa = judge.fmt_interval(nf["speedup"], nf.get("lo"), nf.get("hi")) if nf else "-"
        cells = [str(bool(r.get("correct"))), _raw(r, "speedup_ref"), aa, _raw(r, "speedup_torch"),
                 fmt_fraction(r.get("roof_fraction")), fmt_sol(r.get("sol_ref")), str(r.get("evaluations", 0)),
                 "/".join(str(nb.get(k, 0)) for k in levels), str(r.get("llm_calls", 0)),
                 f"{r.get('input_tokens', 0)}/{r.get('output_tokens', 0)}", _cost(r), f"{r.get('budget_used_s') or 0:.0f}s",
                 f"{r.get('wall_s') or 0:.0f}s"]
        cls = row_class(r)
        err = (f"[{cls}] " if cls else "") + (r.get("error") or "").replace("|", "/").replace("\n", " ")[:90]
        out.append(f"| {link(r['job_id'], href)} | {r.get('level')} | " + " | ".join(link(c, href) for c in cells)
                   + f" | {err} |")
    return out + [""]


def markdown(d: Data) -> str:
    def link(text: str, href: str) -> str:
        return f"[{text}]({href})" if href and not href.startswith("#") else text

    lines = [f"# Experiment {d.cfg['name']}", "",
             f"{len(d.rows)} of {d.total} jobs done. Speedups are measured by one evaluator for every arm: the "
             f"arm's final candidate against {d.ref} and against PyTorch eager, each with its 95% interval "
             "`point [lo, hi]`; a job counts as fast (Fast@p) only when lo > p. "
             "Rates divide by all jobs of a cell; the geomean counts a failed job as 1.00x. Fraction of roof: the "
             "final candidate's speed-of-light time (its kernels at this machine's measured roof, `leka bench roof`) "
             "over its judged time; SOL score: 1 at the roof, 0.5 at the reference (SOL-ExecBench's form). "
             "In the job table, "
             "`?` marks a speedup whose interval was too wide to trust (counted nowhere), `(loaded)` one timed "
             f"while other processes used the machine ({sum(_loaded(r) for r in d.rows)} of {len(d.rows)} jobs); "
             f"`A-vs-A`, {d.ref} against itself in the same evaluation (the noise floor). "
             "Figures: report.html.", ""]
    tl = timers_line(d)
    lines += (table1(d, link) + failure_table(d) + noise_floor_table(d) + ([tl, ""] if tl else []) + platform_audit(d) + ratio_table(d)
              + job_rows(d, link))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------- html
def _md_to_html(lines: list[str]) -> str:
    """The few markdown shapes the tables use (### headings, pipe tables, paragraphs); cell text is
    already HTML (escaped, with links)."""
    out, in_table = [], False
    for ln in lines:
        if ln.startswith("|"):
            cells = [c.strip() for c in ln.strip().strip("|").split(" | ")]
            if set(ln.strip()) <= set("|-: "):  # the header separator
                continue
            if not in_table:
                out.append("<table><tr>" + "".join(f"<th>{c}</th>" for c in cells) + "</tr>")
                in_table = True
            else:
                out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
            continue
        if in_table:
            out.append("</table>")
            in_table = False
        if ln.startswith("### "):
            out.append(f"<h3>{ln[4:]}</h3>")
        elif ln.strip():
            out.append(f"<p>{ln}</p>")
    if in_table:
        out.append("</table>")
    return "\n".join(out)


CSS = ("body{font-family:sans-serif;max-width:1200px;margin:1em auto;font-size:14px}"
       "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
       "th{background:#f4f4f4}td:first-child,td:nth-child(2){text-align:left}figure{display:inline-block;margin:4px}"
       "a{color:#0645ad;text-decoration:none}td:last-child{text-align:left;max-width:420px;font-size:12px}")


def html_report(d: Data) -> str:
    from leka.exp import figures as F

    def link(text: str, href: str) -> str:
        return f'<a href="{html.escape(href)}">{html.escape(text)}</a>' if href else html.escape(text)

    esc = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(d.cfg['name'])}</title>"
             f"<style>{CSS}</style></head><body>",
             f"<h1>Experiment {esc(d.cfg['name'])}</h1>",
             f"<p>{len(d.rows)} of {d.total} jobs done. One evaluator judges every arm's final candidate against "
             f"{esc(d.ref)} and PyTorch eager, each speedup with its 95% interval; a job is fast (Fast@p) only when "
             "the interval's lower bound is above p. Fraction of roof and SOL score (1 at the measured roof, "
             "0.5 at the reference) come from each final candidate's profile. Rates divide by all jobs of a cell; "
             f"the geomean counts a failed job as 1.00x. Jobs timed on a loaded machine: "
             f"{sum(_loaded(r) for r in d.rows)} of {len(d.rows)}. Every number links to its run folder or its jobs.</p>",
             "<h2 id='table1'>Table 1</h2>", _md_to_html(table1(d, link)),
             "<h2 id='failures'>Failures by class</h2>", _md_to_html([esc(x) for x in failure_table(d)]),
             "<h2 id='noise-floor'>Noise floor</h2>", _md_to_html([esc(x) for x in noise_floor_table(d)]),
             f"<p>{esc(timers_line(d))}</p>", _md_to_html([esc(x) for x in platform_audit(d)])]
    for b in d.backends:
        rows = [r for r in d.rows if r["backend"] == b]
        curves = {a: cell_metrics([r for r in rows if r["arm"] == a])["fast_curve"] for a in d.arms
                  if any(r["arm"] == a for r in rows)}
        any_s, tm = F.jobs_points(rows)
        parts += [f"<h2>Figures: {esc(b)}</h2>",
                  f"<figure id='fig-fastp-{esc(b)}'>{F.fast_p(curves, FAST_PS, f'Fast@p, {b} (vs {d.ref})', d.ref)}"
                  "<figcaption>Fast@p for p in [0, 4]</figcaption></figure>",
                  f"<figure id='fig-anytime-{esc(b)}'>{F.anytime(any_s, f'Anytime, {b} (vs the run baseline)')}"
                  "<figcaption>Anytime: best speedup vs wall clock (LEKA arms vs MetaSchedule)</figcaption></figure>",
                  f"<figure id='fig-timemem-{esc(b)}'>{F.time_memory(tm, f'Time x peak memory, {b}')}"
                  "<figcaption>Time x peak-memory front of the final candidates</figcaption></figure>"]
    parts += ["<h2>Ratios and ablation deltas</h2>", _md_to_html([esc(x) for x in ratio_table(d)])]
    parts.append("<h2>Cells</h2>")
    for (b, lv, arm), rows in sorted(d.cells.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0, d.arms.index(kv[0][2])
                                                                       if kv[0][2] in d.arms else 99)):
        items = "".join(f"<li>{link(r['job_id'], _rel(d.exp_dir, r))}: {esc(_raw(r, 'speedup_ref'))} vs {esc(d.ref)}, "
                        f"{esc(_raw(r, 'speedup_torch'))} vs torch</li>" for r in rows)
        parts.append(f"<h4 id='{_cell_id(b, lv, arm)}'>{esc(b)}, level {lv}, {esc(arm)}</h4><ul>{items}</ul>")
    jl = job_rows(d, link)
    parts += ["<h2>Jobs</h2>", _md_to_html(jl[2:])]
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(exp_dir: Path) -> list[Path]:
    d = Data(Path(exp_dir))
    md = Path(exp_dir) / "report.md"
    md.write_text(markdown(d))
    ht = Path(exp_dir) / "report.html"
    ht.write_text(html_report(d))
    return [md, ht]
