"""Processes that die with their parent (issue 26, item 8): a child of `leka` (an evaluation, a
reference computation, a tuning run, a model server) must not outlive it, whatever stops it (Ctrl-C,
SIGTERM, SIGKILL, a `timeout`). `benchmark/proc.py` re-exports it for the evaluator's children.
No tvm; stdlib only.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1
_prctl = None
if sys.platform.startswith("linux"):
    try:
        # resolved once here, in the parent: a preexec_fn should not load libraries after fork
        _prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        _prctl = None


def die_with_parent(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send `sig` to this process when its parent dies; exits at once if the parent
    is gone already (the race between fork and this call). False where prctl is not available
    (not Linux): the caller's other cleanups stand alone.

    The kernel sends it when the *thread* that forked this process exits: call it in a child of a
    thread that outlives the child (a main thread, a forkserver, a Popen in the thread that waits)."""
    if _prctl is None:
        return False
    parent = os.getppid()
    if _prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        return False
    if os.getppid() != parent or parent == 1:
        os._exit(1)  # orphaned before the request took effect: nobody is waiting for this work
    return True
