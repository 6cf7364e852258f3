"""Command-line options whose text comes from a table: `--backend` lists the backend table
(leka.backends) when the command is built, so a backend added by a file, or by `register()` at run
time, shows in `--help` without an edit to any command."""

from __future__ import annotations

from typing import Any

import typer
from typer.models import OptionInfo

from leka.backends import backend_names


class _BackendOptionInfo(OptionInfo):
    # typer reads `help` each time it builds the click command (on every `app()` / CliRunner call)
    @property
    def help(self) -> str:  # type: ignore[override]
        return f"a backend of the table (`leka backends`): {', '.join(backend_names())}"

    @help.setter
    def help(self, _value: str | None) -> None:
        pass


def backend_option(default: str = "llvm") -> Any:
    """`typer.Option(default, "--backend")` with the table's names in its help; the command checks the
    value (`get_backend`), so a bad name stays one line on stderr."""
    info = typer.Option(default, "--backend")
    info.__class__ = _BackendOptionInfo
    return info
