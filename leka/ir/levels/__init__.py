"""The built-in levels' code, one module each: `l0` (the graph: its edit handlers), `l1` (schedules:
state, lowering stage, handlers, files, carry-forward), `l2` (target sources: state, build stage,
handlers, files, carry-forward). Each level's spec in leka.core.levels names its parts here by
reference; a level defined elsewhere brings the same parts (tests/data/l3_level.py).

This package's own module holds only what the levels' files share."""

from __future__ import annotations


class CandidateFilesError(ValueError):
    """A candidate folder that cannot become a Candidate: the message names the file."""


def free_path(files: dict[str, str | bytes], stem: str, suffix: str, key: str) -> str:
    """`stem + suffix`, or with the entry's key in it when another entry of the same name has it (a
    record's entries by their recorded names: an entry the lowering no longer has may share one)."""
    return stem + suffix if stem + suffix not in files else f"{stem}.{key[:8]}{suffix}"
