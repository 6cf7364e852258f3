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

__all__ = ["DEFAULT_TOL", "DOMAINS", "TASKS_DIR", "Task", "counts", "load_task_file", "resolve", "select", "suite"]

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


def select(level: int | None = None, domain: str | None = None, backend: str | None = None,
           family: str | None = None) -> list[Task]:
    """The suite's tasks of a level, a domain (or the backend whose domain it is) and a provenance
    family: `family` matches, case-insensitively, a part of the task's family or of its source, so
    "resnet" finds ResNet-18 and ResNeXt tasks and "mobilenet" every MobileNet."""
    if domain is None and backend is not None:
        domain = get_backend(backend).domain
    tasks = sorted(suite().values(), key=lambda t: (t.level or 0, t.id))
    fam = family.lower() if family else None
    return [t for t in tasks if (level is None or t.level == level) and (domain is None or domain in t.domains)
            and (fam is None or fam in t.family.lower() or fam in t.source.lower())]


def counts(tasks: list[Task], backends: tuple[str, ...]) -> dict[int, dict[str, int]]:
    """Per level: the task count ("tasks") and, per backend, its instances: the tasks whose domains
    hold the backend's domain (a task is an instance on every backend of its domains)."""
    out: dict[int, dict[str, int]] = {}
    doms = {b: get_backend(b).domain for b in backends}
    for t in tasks:
        row = out.setdefault(int(t.level or 0), {"tasks": 0, **dict.fromkeys(backends, 0)})
        row["tasks"] += 1
        for b, d in doms.items():
            row[b] += d in t.domains
    return dict(sorted(out.items()))
