"""Issue 48, item 4: docs name what exists. Every README, every page of docs/ and every docstring of
the project's code is read for the names it gives in backticks, and each must resolve:

- a path (`benchmark/judge/sandbox/control.py`, `leka/ir/`, `docs/boards.md`), from the repository's root,
  from the folder of the file that names it, or from a folder above it (leka/README.md names
  `core/types.py`): a tracked file or a folder holding one; with `::name` or `:name` after a Python
  file, that name is defined there;
- a dotted name of one of the project's packages (`leka.core.confine`, `leka.core.confine.NOBODY`,
  `benchmark.judge.sandbox.wire.Deadline.limit`): the longest prefix that is a module, then each name after it
  defined in the module (or in the class before it).

Not checked: names of other projects, paths with placeholders (`RUN_DIR/...`, `<task>`, `*`, `$X`),
ignored run and cache folders (`runs/`, `.leka-cache/`) and absolute paths; results and notes under
experiments/results/ and the seeds are records of their day, not descriptions of today's code.
"""

from __future__ import annotations

import ast
import re
import subprocess
from functools import cache
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("leka", "benchmark", "agents", "candidate_tree", "profilers", "prompts", "experiments", "tests")
SKIP_DIRS = ("experiments/results/",)
SUFFIXES = (".py", ".md", ".sh", ".yaml", ".yml", ".toml", ".json", ".txt", ".html", ".j2", ".cfg", ".cpp", ".cc",
            ".h", ".cu", ".cl", ".c")
TICKS = re.compile(r"`([^`\n]{2,200})`")
PLACEHOLDER = re.compile(r"[<>*{}$~\[\]|]|\.\.\.|(^|/|_)[A-Z][A-Z0-9]+(_|/|\.|$)| ")
# what the program writes (a candidate's folder, a run's, a cache's): documented layouts, not the repository's
WRITTEN = ("./measure", "candidate/", "views/", "l2/", "cache/", "cache_dir/", "experiments/out/", "runs/")


@cache
def tracked() -> frozenset[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"not a git checkout: {e}")
    return frozenset(p for p in out.split("\0") if p and (ROOT / p).is_file())


@cache
def folders() -> frozenset[str]:
    return frozenset(str(PurePosixPath(p).parent) for p in tracked()) | frozenset(
        str(q) for p in tracked() for q in PurePosixPath(p).parents if str(q) != ".")


@cache
def suffixes() -> dict[str, str]:
    """Every tail of a tracked file's or folder's path (`core/types.py`, `types.py`) -> one full path."""
    out: dict[str, str] = {}
    for p in sorted(tracked() | folders(), key=len):
        parts = PurePosixPath(p).parts
        for k in range(len(parts)):
            out.setdefault("/".join(parts[k:]), p)
    return out


@cache
def names_in_repo() -> frozenset[str]:
    return frozenset(part for p in tracked() for part in PurePosixPath(p).parts)


@cache
def defined(py: str) -> frozenset[str]:
    """Names a Python file defines at its top level and in its classes (as `Class.name` too)."""
    try:
        tree = ast.parse((ROOT / py).read_text())
    except (SyntaxError, UnicodeDecodeError):
        return frozenset()
    names: set[str] = set()

    def targets(node: ast.AST) -> list[str]:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            ts = node.targets if isinstance(node, ast.Assign) else [node.target]
            return [n.id for t in ts for n in ast.walk(t) if isinstance(n, ast.Name)]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [node.name]
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return [(a.asname or a.name).split(".")[0] for a in node.names]
        return []

    def walk(body: list[ast.stmt]) -> list[ast.stmt]:  # into if / try blocks at the same level
        out = []
        for n in body:
            out.append(n)
            for field in ("body", "orelse", "finalbody", "handlers"):
                if isinstance(n, (ast.If, ast.Try)) and getattr(n, field, None):
                    out += walk([x for x in getattr(n, field) if isinstance(x, ast.stmt)]
                                + [s for h in getattr(n, field) if isinstance(h, ast.ExceptHandler) for s in h.body])
        return out

    for node in walk(tree.body):
        names.update(targets(node))
        if isinstance(node, ast.ClassDef):
            for sub in walk(node.body):
                for t in targets(sub):
                    names.update({t, f"{node.name}.{t}"})
            for sub in ast.walk(node):  # attributes set in methods (self.x = ...)
                if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                    names.update({sub.attr, f"{node.name}.{sub.attr}"})
    return frozenset(names)


def _module_file(parts: list[str]) -> str | None:
    base = "/".join(parts)
    for cand in (f"{base}.py", f"{base}/__init__.py"):
        if cand in tracked():
            return cand
    return None


def _dotted(ref: str) -> str | None:
    """Why the dotted name does not resolve, or None."""
    parts = ref.rstrip("()").split(".")
    for k in range(len(parts), 0, -1):
        f = _module_file(parts[:k])
        if f is None:
            continue
        rest = parts[k:]
        if not rest:
            return None
        if ".".join(rest[:2]) in defined(f) or rest[0] in defined(f) and len(rest) == 1:
            return None
        if rest[0] in defined(f) and len(rest) > 1:  # an attribute of something defined there: not followed
            return None
        return f"{rest[0]} is not defined in {f}"
    return f"no module {'.'.join(parts[:2])}"


def _path(ref: str, where: str) -> str | None:
    """Why the path does not resolve, or None: from the naming file's folder or one above it, else as
    the tail of a tracked path (`core/types.py` in the root README names leka/core/types.py)."""
    m = re.match(r"^(?P<path>[^:]+?)(?:(?:::|:)(?P<name>[A-Za-z_][\w.]*))?$", ref)
    if not m:
        return None
    path, name = m["path"].rstrip("/"), m["name"]
    if path.startswith("./"):
        path = path[2:]
    if ref.startswith(WRITTEN) or path.split("/")[0] not in names_in_repo():
        return None  # what a run writes; another project's path (`tvm/support/nvcc.py`)
    full = None
    for b in (PurePosixPath(where).parent, *PurePosixPath(where).parent.parents):
        p = str(b / path) if str(b) != "." else path
        if p in tracked() or p in folders():
            full = p
            break
    full = full or suffixes().get(path)
    if full is None:
        return "no such file or folder"
    if name and full.endswith(".py") and name not in defined(full) and name.split(".")[0] not in defined(full):
        return f"{name} is not defined in {full}"
    return None


@cache
def all_defs() -> frozenset[str]:
    return frozenset(n for f in tracked() if f.endswith(".py") for n in defined(f))


def references(text: str) -> list[str]:
    out = []
    for raw in TICKS.findall(text):
        ref = raw.strip().rstrip(",.;")
        if ref.startswith(("/", "../", "http", "-", "python", "pip ", "git ")) or PLACEHOLDER.search(ref):
            continue
        out.append(ref)
    return out


def kind(ref: str) -> str | None:
    if "/" in ref and re.fullmatch(r"[\w.\-/]+(?:(?:::|:)[A-Za-z_][\w.]*)?", ref):
        head = ref.split("::")[0].split(":")[0].rstrip("/")
        if head.endswith(SUFFIXES) or "." not in PurePosixPath(head).name:
            if head.split("/")[0] in ("", "proc", "dev", "sys", "etc", "usr", "tmp"):
                return None
            return "path"
        return None
    if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+(\(\))?", ref) and ref.split(".")[0] in PACKAGES:
        return "dotted"
    if re.fullmatch(r"_?[a-z][a-z0-9]*_[a-z0-9_]+\(\)", ref):  # `snake_case()`: a function of the project's
        return "function"
    return None


def sources() -> list[tuple[str, str]]:
    """(file, text) of every README / docs page and every docstring of the project's Python files."""
    out = []
    for f in sorted(tracked()):
        if f.startswith(SKIP_DIRS) or "/data/" in f or f.startswith(("benchmark/tasks/", "experiments/kernelbench_format/")):
            continue
        if f.endswith(".md") and (f.startswith("docs/") or PurePosixPath(f).name == "README.md"):
            out.append((f, (ROOT / f).read_text()))
        elif f.endswith(".py"):
            try:
                tree = ast.parse((ROOT / f).read_text())
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    doc = ast.get_docstring(node, clean=False)
                    if doc:
                        out.append((f, doc))
    return out


def test_docs_and_docstrings_name_what_exists():
    bad = []
    for f, text in sources():
        for ref in references(text):
            k = kind(ref)
            why = (_path(ref, f) if k == "path" else _dotted(ref) if k == "dotted"
                   else None if k is None or ref[:-2] in all_defs() else "no function of that name in the project")
            if why:
                bad.append(f"{f}: `{ref}`: {why}")
    assert not bad, f"{len(bad)} name(s) in docs or docstrings that do not exist:\n" + "\n".join(sorted(set(bad)))


def test_the_checker_finds_a_missing_name(tmp_path):
    # the checker's rules on names that exist and names that do not
    assert _path("benchmark/judge/sandbox/control.py", "docs/threat_model.md") is None
    assert _path("core/confine.py", "leka/README.md") is None  # from a folder above the naming file
    assert _path("benchmark/judge/sandbox/wire.py::Deadline", "README.md") is None
    assert _path("benchmark/no_such_module.py", "README.md") == "no such file or folder"
    assert "not defined" in _path("benchmark/judge/sandbox/wire.py::NoSuchThing", "README.md")
    assert _dotted("leka.core.confine.NOBODY") is None
    assert _dotted("benchmark.judge.sandbox.wire.Deadline.limit") is None
    assert "not defined" in _dotted("leka.core.confine.no_such_function")
    assert _dotted("leka.no_such_module") is not None
    assert kind("RUN_DIR/cli_settings.json") is None or PLACEHOLDER.search("RUN_DIR/cli_settings.json")
    assert references("see `runs/<task>/` and `leka.core.confine`") == ["leka.core.confine"]
    assert kind("time_step()") == "function" and "time_step" in all_defs() and "no_such_step" not in all_defs()
