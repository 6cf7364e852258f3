"""Modules over ~500 lines and functions over ~80 lines (the code's size rule), outside
`benchmark/tasks` and `tests`.

    python -m experiments.check_sizes [--max-module 500] [--max-function 80] [--skip PATH ...]

Prints every offender and exits 1 if there is any (`--skip` lists files reported but not failed).
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("leka", "agents", "candidate_tree", "profilers", "benchmark", "experiments")
EXCLUDE = ("benchmark/tasks/", "experiments/results/", "experiments/out/")  # task files; run outputs (IR as written)


def sizes(max_module: int, max_function: int) -> list[tuple[str, str, int]]:
    """(path, what, lines) of each module and function over its limit."""
    out = []
    for pkg in PACKAGES:
        for p in sorted((ROOT / pkg).rglob("*.py")):
            rel = p.relative_to(ROOT).as_posix()
            if rel.startswith(EXCLUDE):
                continue
            text = p.read_text()
            n = len(text.splitlines())
            if n > max_module:
                out.append((rel, "module", n))
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = node.end_lineno - node.lineno + 1
                    if length > max_function:
                        out.append((rel, f"def {node.name}", length))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-module", type=int, default=500)
    ap.add_argument("--max-function", type=int, default=80)
    ap.add_argument("--skip", nargs="*", default=[], help="paths reported but not failed")
    args = ap.parse_args(argv)
    bad = sizes(args.max_module, args.max_function)
    failing = [b for b in bad if b[0] not in args.skip]
    for path, what, n in bad:
        print(f"{'skip' if path in args.skip else 'FAIL'}  {path}: {what} is {n} lines")
    print(f"{len(failing)} over the limits" + (f" ({len(bad) - len(failing)} skipped)" if len(bad) > len(failing) else ""))
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
