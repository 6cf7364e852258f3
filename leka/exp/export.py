"""`leka exp export EXP_DIR DEST`: an experiment folder reduced to what a reader of its report needs, small
enough to commit or mail: the resolved config, the jobs, results.sqlite (a consistent copy), the report,
and of every run folder the small text files its links lead to (summaries, reports, configs, tree views,
the rows' JSON) plus the best node's whole candidate (relax.py, candidate.json, its L1 / L2 files), so
the best candidate of every job can be evaluated again (`leka bench eval TASK --candidate RUN_DIR`).
Tree and checkpoint databases, MetaSchedule databases and shared libraries stay behind.

`leka exp report DEST` regenerates the same report from the copy."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

# and the one-shot table where `leka bench oneshot` wrote one (leka/exp/oneshot_bench.py)
TOP = ("experiment.yaml", "jobs.json", "report.md", "report.html", "oneshot_table.md", "oneshot_table.html",
       "oneshot_cells.json", "oneshot_machine.json")
RUN_FILES = {"summary.json", "report.md", "config.yaml", "run.json", "tree.html", "job_result.json",
             "arm_outcome.json", "ms_rounds.json", "load_best.py", "oneshot.json"}
MAX_FILE_BYTES = 2 * 2**20  # a tree view over this is left out (its run's summary and best node remain)
TEXT = {".json", ".yaml", ".md", ".py", ".html", ".txt"}


def _best_nodes(run: Path) -> set[str]:
    try:
        s = json.loads((run / "summary.json").read_text())
    except (OSError, json.JSONDecodeError):
        return set()
    best = s.get("best_node")
    return {str(best)} if best is not None else set()


def relative_paths(db: sqlite3.Connection, prefix: str) -> None:
    """What `put` does to a text file, in every text column of the database: a failed job's traceback
    names the project's modules by absolute path."""
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        for col in (r[1] for r in db.execute(f'PRAGMA table_info("{table}")') if r[2].upper() == "TEXT"):
            db.execute(f'UPDATE "{table}" SET "{col}" = replace("{col}", ?, \'\') WHERE instr("{col}", ?) > 0',
                       (prefix, prefix))
    db.commit()


def export(exp_dir: Path, dest: Path, project: Path | None = None) -> dict[str, int]:
    """Copy; returns counts (files, bytes, skipped_large). Text files name paths under `project` (default:
    the working directory) relative to it, so the copy carries no path of this machine."""
    prefix = f"{(project or Path.cwd()).resolve()}/"
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty")
    dest.mkdir(parents=True, exist_ok=True)
    n = size = skipped = 0

    def put(src: Path, rel: Path) -> None:
        nonlocal n, size, skipped
        if src.stat().st_size > MAX_FILE_BYTES:
            skipped += 1
            return
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.suffix in TEXT:
            out.write_text(src.read_text(errors="replace").replace(prefix, ""))
        else:
            shutil.copy2(src, out)
        n += 1
        size += src.stat().st_size

    for name in TOP:
        if (exp_dir / name).is_file():
            put(exp_dir / name, Path(name))
    # sqlite's backup API: a consistent copy even of a database with a WAL beside it
    with sqlite3.connect(exp_dir / "results.sqlite") as src, sqlite3.connect(dest / "results.sqlite") as dst:
        src.backup(dst)
        relative_paths(dst, prefix)
    n += 1
    runs = exp_dir / "runs"
    for f in sorted(runs.rglob("*")) if runs.is_dir() else []:
        if not f.is_file():
            continue
        rel = f.relative_to(exp_dir)
        parts = rel.parts
        if "nodes" in parts:
            i = parts.index("nodes")
            run = exp_dir.joinpath(*parts[:i])
            if len(parts) > i + 1 and parts[i + 1] in _best_nodes(run) and f.suffix not in (".so", ".sqlite"):
                put(f, rel)
            continue
        if f.name in RUN_FILES and "ms_db" not in parts:
            put(f, rel)
    return {"files": n, "bytes": size, "skipped_large": skipped}
