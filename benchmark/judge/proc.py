"""Process lifetime helpers for the evaluator's children (issue 26, item 8), called first in a child
forked from the multiprocessing forkserver (benchmark/judge/runner.py's evaluation and reference children,
a sandboxed worker):

- `die_with_parent()`: SIGKILL when the process that forked it (the forkserver) dies. The one
  implementation is leka/core/proc.py (leka's own helper processes, below this layer, use it too).
- `leave_forkserver()`: close the forkserver's "alive" pipe that every forkserver child inherits.
  The forkserver exits on EOF of that pipe, so while a child held it, a killed `leka` left forkserver
  and child waiting on each other (the evaluation that ran on for 34 minutes); closed, leka's death
  ends the forkserver, and its death the child.
- `become_subreaper()` / `kill_descendants()`: the evaluation child adopts what its descendants
  orphan (a double fork, a `setsid`) and kills everything under it before it exits, also when it
  ends normally; the runner kills what is under it when it kills it (leka/core/proc.py).
No tvm.
"""

from __future__ import annotations

import os

from leka.core.proc import become_subreaper, die_with_parent, kill_descendants

__all__ = ["become_subreaper", "die_with_parent", "kill_descendants", "leave_forkserver"]


def leave_forkserver() -> None:
    """Drop this child's write end of the forkserver's alive pipe (it can start no process through
    the forkserver afterwards: a new one would be started)."""
    from multiprocessing import forkserver

    fs = forkserver._forkserver  # noqa: SLF001 - the stdlib keeps the fd there, in every child
    fd = getattr(fs, "_forkserver_alive_fd", None)
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass
        fs._forkserver_alive_fd = None
