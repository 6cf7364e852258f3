"""A fourth level for tests (issue 31, item 2): one spec, one agent and one template (l3_level.j2 beside
this file). A test registers it (`register_level(LEVEL)`); an evaluation child loads it from this file
(the spec's module travels with the job: leka.core.levels.load_extensions).

L3 "notes" a candidate: an edit appends one comment line to the Relax text, which TVMScript's parser
ignores, so the candidate changes and still builds. Its lowering stage runs after L1's and, for a note
`mark:PATH`, writes its process id to PATH: that shows in which process a candidate was lowered."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from leka.core.levels import EditKind, LevelSpec
from leka.core.types import Edit

NOTE = "# L3 note: "


def apply_note(candidate, edit: Edit, workdir: Path, root_params: Any):
    from leka.ir.edits import EditOutcome

    text = str(edit.payload.get("text", ""))
    if not text.strip() or "\n" in text:
        return EditOutcome(error="a note is one non-empty line")
    body = candidate.relax_text.rstrip("\n") + f"\n{NOTE}{text}\n"
    return EditOutcome(candidate=candidate.model_copy(update={"relax_text": body, "invalidated": []}))


def notes(candidate) -> list[str]:
    return [ln[len(NOTE):] for ln in candidate.relax_text.splitlines() if ln.startswith(NOTE)]


def score(report, tuner: bool = False) -> tuple[float, str]:
    if not report.kernels:
        return 0.0, "no profile: nothing to note"
    return 0.9, f"{len(report.kernels)} kernel(s) without a note"


def stage(lw) -> None:
    for note in notes(lw.candidate):
        if note.startswith("mark:"):
            Path(note[len("mark:"):]).write_text(str(os.getpid()))


class RuleL3Agent:
    """Two notes per branch, then nothing."""

    level = "L3"

    def __init__(self, backend: str = "llvm", root_params=None):
        self.backend = backend

    def propose(self, candidate, context) -> list[Edit]:
        n = len(notes(candidate))
        if n >= 2:
            return []
        return [Edit(level="L3", kind="note", payload={"text": f"note {n + 1}"}, rationale="a fourth level's edit")]


LEVEL = LevelSpec(
    "L3", "note", "note level", "one comment line of the Relax text",
    {"note": EditKind("append one comment line to the Relax module", {"text": "the note, one line"},
                      f"{__name__}:apply_note")},
    f"{__name__}:RuleL3Agent", f"{__name__}:score", "the L3 agent (notes on the Relax module)",
    str(Path(__file__).with_name("l3_level.j2")), "#9467bd", "every profiled candidate without notes",
    stage=f"{__name__}:stage", module=__name__)
