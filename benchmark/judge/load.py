"""Is the machine loaded while a timing runs? (issue 27: a busy core made torch eager read 100x slower
and nothing said so.) Other processes' CPU time = the machine's busy time (/proc/stat) minus the CPU
time of this evaluation's own process tree (this process and its descendants: the sandboxed workers,
the TVM thread pool); steal time from /proc/stat's steal column (a hypervisor running other guests on
our cores). Everything returns None where /proc/stat is absent (macOS, a restricted container): no
load is then reported, rather than a made-up one.

No tvm import; psutil is optional (without it, os.times(): this process and its reaped children)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

STAT = "/proc/stat"
# below this much other-process CPU time a timing is never "loaded": /proc/stat and the per-process
# times count in clock ticks (10 ms), so a short timing's difference of two tick counts is that coarse
MIN_OTHER_S = 0.05


def _tick() -> float:
    try:
        return 1.0 / os.sysconf("SC_CLK_TCK")
    except (AttributeError, OSError, ValueError):
        return 0.01


def machine_cpu(path: str = STAT) -> tuple[float, float] | None:
    """(busy seconds, steal seconds) of all CPUs since boot, from the aggregate `cpu` line of
    /proc/stat; None when it cannot be read. Busy = user + nice + system + irq + softirq (guest time
    is already inside user / nice; idle, iowait and steal are not work done by this guest)."""
    try:
        with open(path) as f:
            first = f.readline().split()
    except OSError:
        return None
    if not first or first[0] != "cpu" or len(first) < 8:
        return None
    try:
        v = [int(x) for x in first[1:]]
    except ValueError:
        return None
    tick = _tick()
    user, nice, system, _idle, _iowait, irq, softirq = v[:7]
    steal = v[7] if len(v) > 7 else 0
    return (user + nice + system + irq + softirq) * tick, steal * tick


def own_cpu_s() -> float:
    """CPU seconds of this process and its descendants: live ones' user + system, and the children
    they (or we) have reaped (children_user / children_system), so a worker that exits during the
    timing is still counted once it is waited for."""
    try:
        import psutil
    except ImportError:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system
    me = psutil.Process()
    total = 0.0
    try:
        procs = [me, *me.children(recursive=True)]
    except psutil.Error:
        procs = [me]
    for p in procs:
        try:
            c = p.cpu_times()
        except psutil.Error:  # exited meanwhile, or not ours to read
            continue
        total += c.user + c.system + getattr(c, "children_user", 0.0) + getattr(c, "children_system", 0.0)
    return total


@dataclass
class Snapshot:
    wall: float
    busy: float
    steal: float
    own: float


def start(path: str = STAT) -> Snapshot | None:
    m = machine_cpu(path)
    if m is None:
        return None
    return Snapshot(time.perf_counter(), m[0], m[1], own_cpu_s())


def finish(snap: Snapshot | None, share: float, path: str = STAT) -> dict[str, Any] | None:
    """What other processes (and the hypervisor) took since `snap`: {"other_cpu_s", "steal_s", "own_cpu_s",
    "wall_s", "loaded"}; "loaded" when other + steal is over `share` of one core for the timing's wall
    time (and over MIN_OTHER_S). None without a snapshot or /proc/stat."""
    if snap is None:
        return None
    m = machine_cpu(path)
    if m is None:
        return None
    return judge(snap, Snapshot(time.perf_counter(), m[0], m[1], own_cpu_s()), share)


def judge(a: Snapshot, b: Snapshot, share: float) -> dict[str, Any]:
    """The load between two snapshots (pure: the tests feed it synthetic ones)."""
    wall = max(0.0, b.wall - a.wall)
    own = max(0.0, b.own - a.own)
    # tick rounding of the two counters can make the difference slightly negative on an idle machine
    other = max(0.0, (b.busy - a.busy) - own)
    steal = max(0.0, b.steal - a.steal)
    loaded = other + steal > max(share * wall, MIN_OTHER_S)
    return {"other_cpu_s": round(other, 3), "steal_s": round(steal, 3), "own_cpu_s": round(own, 3),
            "wall_s": round(wall, 3), "share": share, "loaded": bool(loaded)}
