"""Measuring slots: at most N evaluations of one machine at a time, whoever starts them.

A run spends most of an LLM policy's wall clock waiting for replies; only its evaluations need the
machine. A grid (`leka exp run`) can then run more jobs than the machine has measuring slots: each
job's Ray share is small, and every evaluation child takes one of `evaluator.measure_slots` slots
for its whole life (build, check, time), so two evaluations never time each other's cores.

A slot is a file lock (flock) in a directory shared by the machine's processes; the kernel releases
it when its holder dies, so a killed job never keeps a slot. The time spent waiting for a slot is not
charged to the run's wall-clock budget (leka/loop/context.py), so a job that waited is not
penalised against one that did not.

No tvm import here.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from pathlib import Path

POLL_S = 0.05


def slot_dir(backend: str) -> Path:
    """Per machine and backend; LEKA_MEASURE_DIR overrides (tests, or a shared device host)."""
    base = os.environ.get("LEKA_MEASURE_DIR") or tempfile.gettempdir()
    return Path(base) / f"leka-measure-{os.getuid()}-{backend}"


class Hold:
    """A held file lock (a slot, a side of the CPU gate): `release()` (idempotent) gives it back;
    `waited_s` is how long it took to get."""

    def __init__(self, fd: int | None, waited_s: float):
        self._fd, self.waited_s = fd, waited_s

    def release(self) -> None:
        if self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> Hold:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class Slot(Hold):
    """One held measuring slot, `index` of N (-1: the dummy of no limit)."""

    def __init__(self, fd: int | None, index: int, waited_s: float):
        super().__init__(fd, waited_s)
        self.index = index


def cpu_sockets() -> int:
    """This machine's CPU sockets (distinct physical package ids; 1 where sysfs does not say): a grid's
    default measuring slots for a backend that measures on the host's cores (leka.exp.config)."""
    ids = set()
    for p in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/topology/physical_package_id"):
        try:
            ids.add(p.read_text().strip())
        except OSError:
            continue
    return max(1, len(ids))


def acquire(n_slots: int, backend: str, timeout_s: float | None = None) -> Slot:
    """Block until one of `n_slots` slots is free and take it. `n_slots <= 0`: no limit (a dummy slot).
    Raises TimeoutError after `timeout_s` (None: wait as long as it takes)."""
    if n_slots <= 0:
        return Slot(None, -1, 0.0)
    d = slot_dir(backend)
    d.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    # each process starts its scan at its own slot, so waiting processes do not all hammer slot 0
    start = os.getpid() % n_slots
    while True:
        for j in range(n_slots):
            i = (start + j) % n_slots
            fd = os.open(d / f"slot-{i}.lock", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return Slot(fd, i, time.monotonic() - t0)
        if timeout_s is not None and time.monotonic() - t0 > timeout_s:
            raise TimeoutError(f"no measuring slot of {n_slots} free after {timeout_s:g} s ({d})")
        time.sleep(POLL_S)


# ----------------------------------------------------------------------------- the CPU gate
# Slots keep two evaluations from timing each other; the gate keeps everything else off the cores while
# one is timed. Work that only competes for the cores (builds, a rule agent's proposals and edits) holds
# it shared; checks, profiles and timings hold it exclusively. A taker passes a gate lock first and an
# exclusive taker keeps it while it waits, so new shared takers queue behind it (writer preference): a
# stream of builds cannot starve a timing. Waits are reported so that nobody's budget counts them.
def _locked(path: Path, op: int) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, op)
    except BaseException:
        os.close(fd)
        raise
    return fd


def cpu_gate(backend: str, exclusive: bool, enabled: bool = True, where: str | None = None) -> Hold:
    """Take the machine's CPU gate for `backend`, shared or exclusive (see above); a dummy when not
    enabled (no measuring slots: a run alone on its machine). `where`: the slots' folder as the job's
    parent named it (an evaluation child forked from a forkserver has the server's environment)."""
    if not enabled:
        return Hold(None, 0.0)
    d = Path(where) if where else slot_dir(backend)
    d.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    gate = _locked(d / "gate.lock", fcntl.LOCK_EX)
    try:
        fd = _locked(d / "cpu.lock", fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    finally:
        fcntl.flock(gate, fcntl.LOCK_UN)
        os.close(gate)
    return Hold(fd, time.monotonic() - t0)
