"""The `leka` command. Sub-commands live with their component (`benchmark/cli.py`, ...) and are
mounted here; bad input becomes one clear line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import sys
import warnings

import typer

from leka.types import UserError

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="LEKA: layered agents that optimise tensor programs through TVM.")


def _mount() -> None:
    from benchmark.cli import app as bench_app

    app.add_typer(bench_app, name="bench", help="EdgeKernelBench: list tasks, evaluate, tune baselines.")
    from candidate_tree.cli import app as tree_app
    app.add_typer(tree_app, name="tree", help="Candidate tree: show nodes, best-k, lineage; export HTML/JSON.")


def main() -> None:
    # torch.export prints FutureWarnings about its own internals on every call
    warnings.filterwarnings("ignore", category=FutureWarning)
    os.environ.setdefault("TVM_LOG_DEBUG", "0")
    _mount()
    try:
        app()
    except UserError as e:
        print(f"leka: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
