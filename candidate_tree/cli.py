"""`leka tree show RUN_DIR [--best K] [--lineage ID]` and `leka tree export RUN_DIR --html OUT [--json OUT]`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from candidate_tree.store import DB_NAME, Node, Tree
from leka.core.types import UserError

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="Inspect and export a run's candidate tree.")


def _open(run_dir: Path) -> Tree:
    if not (run_dir / DB_NAME).is_file():
        raise UserError(f"no candidate tree in {run_dir} (expected {run_dir / DB_NAME})")
    return Tree(run_dir, create=False, mirror=False)


def _table(title: str, nodes: list[Node]) -> Table:
    t = Table(title=title)
    for col, just in (("id", "right"), ("parent", "right"), ("level", "left"), ("status", "left"),
                      ("speedup", "right"), ("edit", "left"), ("route reason", "left")):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for n in nodes:
        s = n.speedup
        t.add_row(str(n.id), "" if n.parent is None else str(n.parent), n.level or "root", n.status.value,
                  "" if s is None else f"{s:.3f}x", n.edit.kind if n.edit else "",
                  n.route_reason if len(n.route_reason) <= 80 else n.route_reason[:77] + "...")
    return t


@app.command()
def show(run_dir: Path = typer.Argument(..., help="run folder holding tree.sqlite"),
         best: int | None = typer.Option(None, "--best", min=1, help="only the K fastest correct nodes"),
         lineage: int | None = typer.Option(None, "--lineage", help="only root ... this node")) -> None:
    """Print the tree's nodes as a table."""
    with _open(run_dir) as tree:
        if lineage is not None:
            try:
                nodes, title = tree.lineage(lineage), f"lineage of node {lineage}"
            except KeyError as e:
                raise UserError(f"no node {lineage} in {run_dir}") from e
        elif best is not None:
            nodes, title = tree.best(best), f"best {best} of {tree.count()} nodes"
        else:
            nodes, title = tree.nodes(), f"{tree.count()} nodes"
    Console(width=160).print(_table(title, nodes))


@app.command()
def export(run_dir: Path = typer.Argument(..., help="run folder holding tree.sqlite"),
           html: Path | None = typer.Option(None, "--html", help="write a self-contained HTML view here"),
           json_out: Path | None = typer.Option(None, "--json", help="write the nodes as JSON here")) -> None:
    """Write the tree as a self-contained HTML page and/or JSON."""
    if html is None and json_out is None:
        raise UserError("nothing to export: give --html OUT and/or --json OUT")
    with _open(run_dir) as tree:
        if html is not None:
            print(f"wrote {tree.export_html(html)}")
        if json_out is not None:
            tree.to_json(json_out)
            print(f"wrote {json_out}")
