"""Issue 31, item 5: every folder's README names every file in it.

The rule, over the files git tracks:
- A folder's files are covered by its own README.md or, where it has none, by the nearest folder above
  that has one (leka/README.md lists `core/`, `ir/`, ...), which names them by their path from there.
- A file is named when its path from the covering README's folder appears as a word of that README
  (`task.py`; `core/types.py` in leka/README.md), when a glob in the README matches it
  (`test_ir_*.py`; not `*.py`), or when its name is on a line that also names its folder (a table row whose first
  cell is `backends/` and that lists `llvm.py`, `cuda.py`).
- Not named one by one: README.md itself, `__init__.py` (the folder's own entry names the package),
  dot-files, and the files under the data folders of DATA_FOLDERS (task files, fixtures, logs of
  runs), whose folder the covering README names instead.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]

# folder -> why its files are not listed one by one (the covering README names the folder)
DATA_FOLDERS = {
    "benchmark/tasks/level1": "the suite's task files, counted and checked by tests/test_tasks.py",
    "benchmark/tasks/level2": "the suite's task files",
    "benchmark/tasks/level3": "the suite's task files",
    "experiments/kernelbench_format": "KernelBench-format task files at KernelBench's sizes",
    "experiments/results/cuda_subset_h200": "the logs and tables of one GPU session, read through its .md",
    "experiments/results/bench_vs_engines_cuda_h200": "the raw rows and logs of one GPU session, read through its .md",
    "experiments/results/bench_equal_clock_cuda_h200": "the raw rows of one GPU session, read through its .md",
    "tests/data": "fixtures, named by the tests that read them",
}
EXEMPT = {"README.md", "__init__.py"}


def tracked() -> list[PurePosixPath]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:  # which files are the repository's needs git
        pytest.skip(f"not a git checkout: {e}")
    return [PurePosixPath(p) for p in out.split("\0") if p and (ROOT / p).is_file()]


def _data_folder(p: PurePosixPath) -> str | None:
    return next((d for d in DATA_FOLDERS if p.is_relative_to(d)), None)


def _covering(folder: PurePosixPath, readmes: set[PurePosixPath]) -> PurePosixPath:
    for d in (folder, *folder.parents):
        if d / "README.md" in readmes:
            return d
    raise AssertionError(f"no README.md covers {folder}")


def _word(text: str, name: str) -> bool:
    # bounded by anything but a name's characters or a slash, so `leka/core/task.py` does not name
    # benchmark/task.py
    return re.search(rf"(?<![\w/.-]){re.escape(name)}(?![\w/-])", text) is not None


def names(readme_text: str, rel: PurePosixPath, folder: bool = False) -> bool:
    """Whether the README names `rel` (a path from its folder; a folder's name ends with a slash)."""
    end = "/" if folder else ""
    if _word(readme_text, f"{rel}{end}"):
        return True
    # globs in code spans only (`**bold**` is none), and with a name part before the first star: `*.py`
    # would name every file at once
    globs = {g for g in re.findall(r"`([^`\s]*\*[^`\s]*)`", readme_text) if not PurePosixPath(g).name.startswith("*")}
    if any(fnmatch.fnmatchcase(str(rel), g) for g in globs):
        return True
    if len(rel.parts) > 1:
        return any(_word(line, f"{rel.parent}/") and _word(line, f"{rel.name}{end}")
                   for line in readme_text.splitlines())
    return False


def unnamed() -> dict[str, list[str]]:
    files = tracked()
    readmes = {p for p in files if p.name == "README.md"}
    missing: dict[str, list[str]] = {}
    for p in files:
        if p.name in EXEMPT or p.name.startswith(".") or _data_folder(p):
            continue
        cover = _covering(p.parent, readmes)
        text = (ROOT / cover / "README.md").read_text()
        if not names(text, p.relative_to(cover)):
            missing.setdefault(str(cover / "README.md"), []).append(str(p.relative_to(cover)))
    for d in DATA_FOLDERS:
        folder = PurePosixPath(d)
        cover = _covering(folder.parent, readmes)
        if not names((ROOT / cover / "README.md").read_text(), folder.relative_to(cover), folder=True):
            missing.setdefault(str(cover / "README.md"), []).append(f"{folder.relative_to(cover)}/")
    return missing


def test_every_file_is_named_by_its_readme():
    missing = unnamed()
    assert not missing, "files their README does not name:\n" + "\n".join(
        f"  {readme}: {', '.join(files)}" for readme, files in sorted(missing.items()))


def test_data_folders_exist():
    # a data folder that moved would silently exempt nothing and name nothing
    for d in DATA_FOLDERS:
        assert any(p.is_relative_to(d) for p in tracked()), d


@pytest.mark.parametrize(("text", "rel", "named"), [
    ("| `task.py` | the suite |", "task.py", True),
    ("the format is `leka/core/task.py`", "task.py", False),  # another folder's file of that name
    ("| `core/types.py` | records |", "core/types.py", True),
    ("| `backends/` | records in `llvm.py`, `cuda.py` |", "backends/cuda.py", True),
    ("| `backends/` | records |\n| x | `cuda.py` |", "backends/cuda.py", False),  # not on the folder's line
    ("| `test_ir_*.py` | IR layers |", "test_ir_l0.py", True),
    ("| `test_ir.py` | IR |", "test_ir_l0.py", False),
    ("**L0** edits the graph", "test_ir_l0.py", False),
    ("every `*.py` file", "test_ir_l0.py", False),
])
def test_what_counts_as_named(text, rel, named):
    assert names(text, PurePosixPath(rel)) is named


@pytest.mark.parametrize(("text", "rel", "named"), [
    ("| `data/` | fixtures |", "data", True),
    ("| `results/` | tables; logs in `cuda_subset_h200/` |", "results/cuda_subset_h200", True),
    ("| `results/` | `cuda_subset_h200.md` |", "results/cuda_subset_h200", False),  # the table, not the folder
])
def test_what_counts_as_a_named_folder(text, rel, named):
    assert names(text, PurePosixPath(rel), folder=True) is named
