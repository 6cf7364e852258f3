"""What bounds LEKA's answer where an engine is faster (issue 44), for experiments/bench_vs_engines.py:
the answer's hottest kernel from its profile, one line per task behind the best engine, and a table
against an earlier (before) run of the same grid."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any


def hot_kernel(profile: dict | None) -> dict | None:
    """The answer's hottest kernel from its profile (profilers/: per kernel its time share, bound and
    fraction of roof), and the memory level its working set fits in (the roof level a memory-bound kernel
    is held to): what the table names for a task behind the best engine."""
    ks = [k for k in (profile or {}).get("kernels") or [] if k.get("share")]
    if not ks:
        return None
    k = max(ks, key=lambda k: k["share"])
    level = None
    if k.get("bound") == "memory":
        for lv in ((profile or {}).get("peaks") or {}).get("levels") or []:
            if not lv.get("capacity") or (k.get("bytes") or 0) <= lv["capacity"]:
                level = lv.get("name")
                break
    return {"name": k.get("name"), "kind": k.get("kind"), "share": k.get("share"), "bound": k.get("bound"),
            "level": level, "roof_fraction": k.get("roof_fraction"), "l2_override": k.get("l2_override"),
            "scheduled": k.get("scheduled")}


def answer_hot(out: Path, run: dict) -> dict | None:
    """`hot_kernel` of the run's answer, from the profile its own evaluation in the run took (the tree)."""
    from candidate_tree import Tree

    rd = out / run["run_dir"]
    if not (rd / "tree.sqlite").is_file() or run.get("best_node") is None:
        return None
    tree = Tree(rd, create=False, mirror=False)
    try:
        return hot_kernel(tree.get(int(run["best_node"])).profile)
    finally:
        tree.close()


def behind_lines(d: dict[str, Any], engines: list[str]) -> list[str]:
    """Per arm: a line per task behind the best engine naming its answer's hottest kernel (the untuned row's
    `hot`), the count of tasks ahead with the interval above 1, and the Level-1 hottest kernels' median roof."""
    from profilers.roof import fmt_fraction

    judged, tasks = d["judged"], d["tasks"]
    lines: list[str] = []
    for a in d["arms"]:
        lines += ["", f"Where {a} is behind the best engine (its ratio's interval below 1, or the ratio under 1), "
                  "what bounds it: the answer's hottest kernel, its share of the time, what holds it (compute, "
                  "or the memory level its working set fits in) and its fraction of that roof:", ""]
        behind = ahead = 0
        for t in tasks:
            rows = [(k, r) for k in engines if (r := judged.get((a, t, k))) and r.get("status") == "ok"]
            if not rows:
                continue
            k, r = min(rows, key=lambda kr: kr[1]["speedup"])
            if r.get("lo") is not None and r["lo"] > 1:
                ahead += 1
            if r["speedup"] >= 1 and not (r.get("hi") is not None and r["hi"] < 1):
                continue
            behind += 1
            h = (judged.get((a, t, "untuned")) or {}).get("hot")
            what = (f"`{h['name']}` ({h['kind']}, {h['share']:.0%} of the time), "
                    + (f"memory-bound ({h['level'] or 'DRAM'})" if h.get("bound") == "memory" else f"{h['bound']}-bound")
                    + f" at {fmt_fraction(h.get('roof_fraction'))} of its roof"
                    + (", an L2 C++ kernel" if h.get("l2_override") else "" if h.get("scheduled") else ", unscheduled")
                    if h else "no profile of the answer")
            lines.append(f"- {t}: {r['speedup']:.2f}x of {k}; {what}")
        if not behind:
            lines.append("- none")
        lines += ["", f"{a}: {ahead} tasks ahead of the best engine with the interval above 1, {behind} behind."]
        hots = [h["roof_fraction"] for t in tasks if t.startswith("l1_")
                and (h := (judged.get((a, t, "untuned")) or {}).get("hot")) and h.get("roof_fraction") is not None]
        if hots:
            lines.append(f"{a}: the hottest kernel of the Level-1 answers is at median {fmt_fraction(statistics.median(hots))} "
                         f"of its roof ({len(hots)} answers).")
    return lines


def against_before(d: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Per task judged in both tables: this table's speedup over the earlier table's, against the same
    engine (each ratio is two judged runs apart, so an estimate without an interval), and the best
    engine's ratio before and after."""
    engines = [k for k in d["kinds"] if k not in ("untuned", "tuned") and k in b["kinds"]]
    lines = ["", "## Against the before table", "",
             "Per task: the answer's speedup over each engine in this table divided by the before table's (the "
             "same engine, the same machine; two runs apart, so no interval); then LEKA / best engine before and "
             "now.", "",
             "| task | " + " | ".join(f"{k} now / before" for k in engines) + " | vs best engine before | now |",
             "|---|" + "---|" * (len(engines) + 2)]
    for a in d["arms"]:
        for t in d["tasks"]:
            now = {k: r["speedup"] for k in engines if (r := d["judged"].get((a, t, k))) and r.get("status") == "ok"}
            was = {k: q["speedup"] for k in engines if (q := b["judged"].get((a, t, k))) and q.get("status") == "ok"}
            if not was:
                continue
            cells = [f"{now[k] / was[k]:.2f}x" if k in now and k in was else "-" for k in engines]
            lines.append(f"| {t} | " + " | ".join(cells) + f" | {min(was.values()):.2f}x | "
                         + (f"{min(now.values()):.2f}x" if now else "-") + " |")
    return lines
