"""The embedded suite: tasks under `benchmark/tasks/level{1,2,3}/`, addressed by id. A task file itself
(the `Task` record, `load_task_file`) is the core's format (`leka.core.task`), re-exported here.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from pathlib import Path

from leka.backends import get_backend
from leka.core.task import DEFAULT_TOL, DOMAINS, Task, load_task_file
from leka.core.types import UserError

__all__ = ["DEFAULT_TOL", "DOMAINS", "TASKS_DIR", "Task", "load_task_file", "resolve", "select", "suite"]

TASKS_DIR = Path(__file__).parent / "tasks"


@lru_cache(maxsize=1)
def _suite_paths() -> tuple[Path, ...]:
    return tuple(sorted(p for p in TASKS_DIR.glob("level*/*.py") if not p.name.startswith("_")))


def suite() -> dict[str, Task]:
    """Every task of the embedded suite, by id. Duplicate ids are a suite bug: fail loudly."""
    out: dict[str, Task] = {}
    for p in _suite_paths():
        t = load_task_file(p)
        if t.id in out:
            raise RuntimeError(f"duplicate task id {t.id!r}: {out[t.id].path} and {p}")
        out[t.id] = t
    return out


def _suite_ids_fast() -> dict[str, Path]:
    """id -> path without importing every task (ids default to the file stem; META ids are read
    textually so `leka bench eval ID` does not import 150 torch modules)."""
    import re

    out = {}
    for p in _suite_paths():
        m = re.search(r"""["']id["']\s*:\s*["']([^"']+)["']""", p.read_text())
        out[m.group(1) if m else p.stem] = p
    return out


def resolve(ref: str | Path) -> Task:
    """A task id of the suite, or the path of any KernelBench-format file."""
    s = str(ref)
    p = Path(s).expanduser()
    if p.suffix == ".py" or p.exists():
        return load_task_file(p)
    ids = _suite_ids_fast()
    if s in ids:
        return load_task_file(ids[s])
    close = difflib.get_close_matches(s, list(ids), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UserError(f"unknown task {s!r}{hint}")


def select(level: int | None = None, domain: str | None = None, backend: str | None = None) -> list[Task]:
    if domain is None and backend is not None:
        domain = get_backend(backend).domain
    tasks = sorted(suite().values(), key=lambda t: (t.level or 0, t.id))
    return [t for t in tasks if (level is None or t.level == level) and (domain is None or domain in t.domains)]
