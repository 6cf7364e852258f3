"""Compare the candidate trees of run folders: the same seed should give the same tree.

    python -m experiments.compare_trees RUN_A RUN_B [RUN_C ...]     # each against the first
    python -m experiments.compare_trees --pairs DIR_A DIR_B           # same-named run folders of two outs

A node is compared by (id, parent, level, edit kind, edit digest, candidate hash, status class). Timing
noise can change which node is expanded next (selection reads measured speedups), so two runs of the
same code may differ; the script then also compares what the deterministic parts produce: for every
candidate expanded at the same level in both runs (matched by candidate hash and level), the edits
proposed from it and the candidates they made (`expansions`). Exit 1 when the expansions of a common candidate differ;
different node orders alone are reported, not failed.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

from leka.core.types import Edit, edit_digest

# statuses that only differ by timing (deferred acceptance is driven by measured speedups)
_CORRECT = {"correct", "measured", "pending", "pruned"}


def tree_rows(run_dir: Path) -> list[tuple]:
    con = sqlite3.connect(f"file:{run_dir / 'tree.sqlite'}?mode=ro", uri=True)
    rows = con.execute("SELECT id, parent, level, edit, candidate_hash, status FROM nodes ORDER BY id").fetchall()
    con.close()
    out = []
    for nid, parent, level, edit, chash, status in rows:
        e = Edit.model_validate_json(edit) if edit else None
        out.append((nid, parent, level, e.kind if e else None, edit_digest(e) if e else None, chash,
                    "ok" if status in _CORRECT else status))
    return out


def expansions(rows: list[tuple]) -> dict[str, list[tuple]]:
    """(parent candidate hash, level) -> sorted (kind, edit digest, child hash) of those children."""
    by_id = {r[0]: r for r in rows}
    out: dict[tuple, list[tuple]] = {}
    for _nid, parent, level, kind, digest, chash, _ in rows:
        if parent is not None:
            out.setdefault((by_id[parent][5], level), []).append((kind, digest, chash))
    return {k: sorted(v) for k, v in out.items()}


def compare(a: Path, b: Path) -> tuple[bool, bool, str]:
    """(same tree, same expansions of common candidates, message)."""
    ra, rb = tree_rows(a), tree_rows(b)
    ea, eb = expansions(ra), expansions(rb)
    common = sorted(set(ea) & set(eb))
    differ = [h for h in common if ea[h] != eb[h]]
    prefix = 0
    for x, y in zip(ra, rb, strict=False):
        if x != y:
            break
        prefix += 1
    same = ra == rb
    msg = (f"{a.name} vs {b.name}: {len(ra)} vs {len(rb)} nodes, first {prefix} identical; "
           f"{len(common)} (candidate, level) expansions in both, {len(common) - len(differ)} identical")
    if not same and prefix < min(len(ra), len(rb)):
        msg += f"\n  first difference:\n    {ra[prefix]}\n    {rb[prefix]}"
    for h in differ[:3]:
        msg += f"\n  expansions of {h} differ:\n    {ea[h]}\n    {eb[h]}"
    return same, not differ, msg


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--pairs", action="store_true", help="two out folders: compare run folders by task")
    ap.add_argument("--json", type=Path, help="write the comparison here")
    args = ap.parse_args(argv)
    pairs: list[tuple[Path, Path]] = []
    if args.pairs:
        da, db = args.runs
        by_task = {p.name.split("-2")[0]: p for p in sorted(db.iterdir()) if (p / "tree.sqlite").exists()}
        pairs = [(p, by_task[p.name.split("-2")[0]]) for p in sorted(da.iterdir())
                 if (p / "tree.sqlite").exists() and p.name.split("-2")[0] in by_task]
    else:
        pairs = [(args.runs[0], r) for r in args.runs[1:]]
    ok, report = True, []
    for a, b in pairs:
        same, same_exp, msg = compare(a, b)
        ok &= same_exp
        report.append({"a": str(a), "b": str(b), "same_tree": same, "same_expansions": same_exp, "message": msg})
        print(("SAME  " if same else "ORDER " if same_exp else "DIFF  ") + msg)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
