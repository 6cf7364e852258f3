"""A fourth level for tests (issue 48, part 1): runtime options, after L2. One file (and its template,
l3_level.j2 beside it) that the rest of the code takes from its spec: registered by a run config
(`levels: {extra: ["tests/data/l3_level.py:LEVEL"]}`, leka.core.config) or by `register_level(LEVEL)`;
an evaluation child loads it from this file (the spec's module travels with the job:
leka.core.levels.load_extensions).

L3 keeps a state of its own on the candidate (`RuntimeOptions`, `Candidate.levels["L3"]`): the compute
threads the candidate's program runs with. Its phase is "run": the sandboxed worker that runs the
candidate takes its thread count from it (leka.ir.run_options; the baseline's worker keeps the job's).
Its files in a candidate folder: `l3/runtime.json`. An L0 edit keeps it as it is (no carry hook: the
options do not depend on the graph)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from leka.core.levels import EditKind, LevelSpec
from leka.core.types import Edit

NAME = "L3"
FILE = "l3/runtime.json"


class RuntimeOptions(BaseModel):
    """How the candidate runs: None keeps the job's own setting."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    threads: int | None = None  # compute threads (TVM's pool, OpenMP's), at most the job's


def options(candidate) -> RuntimeOptions:
    return candidate.state(NAME)


def apply_runtime(candidate, edit: Edit, workdir: Path, root_params: Any):
    """The "runtime" edit: payload {"threads": N}."""
    from leka.ir.edits import EditOutcome

    n = edit.payload.get("threads")
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= (os.cpu_count() or 1):
        return EditOutcome(error=f"threads must be an integer from 1 to {os.cpu_count() or 1}, got {n!r}")
    if options(candidate).threads == n:
        return EditOutcome(error=f"the candidate runs with {n} thread(s) already: nothing changes")
    new = options(candidate).model_copy(update={"threads": n})
    return EditOutcome(candidate=candidate.with_state(NAME, new).model_copy(update={"invalidated": []}))


def at_run(candidate, run) -> None:
    """The level's stage, phase "run" (leka.ir.candidate.RunOptions): the thread count its runs take."""
    n = options(candidate).threads
    if n is not None:
        run.threads = n
        run.extra["threads_asked"] = n


def score(report, tuner: bool = False) -> tuple[float, str]:
    if not report.kernels:
        return 0.0, "no profile: nothing to run"
    return 0.9, f"{len(report.kernels)} kernel(s), each call forks and joins the thread pool"


class RuntimeFiles:
    """`l3/runtime.json`: the options, where the candidate sets any."""

    def write(self, candidate, names, files: dict[str, str | bytes], record: bool) -> None:
        opts = options(candidate)
        if opts != RuntimeOptions():
            files[FILE] = json.dumps(opts.model_dump(exclude_none=True), indent=1)

    def edits(self, folder: Path) -> list[tuple[str, Edit]]:
        p = folder / FILE
        if not p.is_file():
            return []
        return [(FILE, Edit(level=NAME, kind="runtime", payload=json.loads(p.read_text())))]


FILES = RuntimeFiles()


class RuleL3Agent:
    """One thread, then two (where the machine has them), then nothing."""

    level = NAME

    def __init__(self, backend: str = "llvm", root_params=None):
        self.backend = backend

    def propose(self, candidate, context) -> list[Edit]:
        tried = options(candidate).threads
        for n in (1, 2):
            if (tried is None or n > tried) and n <= (os.cpu_count() or 1):
                return [Edit(level=NAME, kind="runtime", payload={"threads": n},
                             rationale=f"run with {n} thread(s): small kernels pay for the pool's fork and join")]
        return []


LEVEL = LevelSpec(
    NAME, "runtime", "runtime-options level", "the options the candidate's program runs with",
    {"runtime": EditKind("set the runtime options the candidate runs with",
                         {"threads": "compute threads, an integer from 1 to the cores the run has"},
                         f"{__name__}:apply_runtime")},
    f"{__name__}:RuleL3Agent", f"{__name__}:score", "the L3 agent (runtime options of the candidate's program)",
    str(Path(__file__).with_name("l3_level.j2")), "#9467bd", "small kernels whose calls the thread pool's fork and join dominate",
    stage=f"{__name__}:at_run", phase="run", module=__name__, state=f"{__name__}:RuntimeOptions",
    files=f"{__name__}:FILES")
