"""Process-wide settings a candidate could change to slow its baseline's turn (issue 13, "baseline
isolation"): the calling thread's CPU affinity, scheduling policy and priority, torch's and every
loaded OpenMP runtime's thread counts, the floating-point environment (rounding, x87 control word,
MXCSR control bits: flush-to-zero / denormals-are-zero), the C environment (`setenv` from C is not
seen by `os.environ`) and the set of signals with handlers.

`Guard()` records them before the candidate first runs; `Guard.check()` after each candidate call
(or timing sample) raises `ProcessStateChanged` naming what differs. Reading them costs ~0.1 ms.

What it does not see: settings of other threads (TVM's and OpenMP's workers), memory or cache
pressure a candidate leaves behind, child processes (the evaluator kills the whole process group).
"""

from __future__ import annotations

import ctypes
import os
import platform
from pathlib import Path
from typing import Any

_LIBC = ctypes.CDLL(None)


class ProcessStateChanged(RuntimeError):
    """A process-wide setting differs from its value before the candidate ran."""


def _fp_env() -> dict[str, int]:
    """Rounding mode and the FP control registers; sticky status flags are left out (every float
    computation may set them)."""
    out = {"round": int(_LIBC.fegetround())}
    buf = ctypes.create_string_buffer(64)
    if _LIBC.fegetenv(buf) != 0:
        return out
    raw = buf.raw
    machine = platform.machine()
    if machine in ("x86_64", "AMD64"):
        # glibc's x86-64 fenv_t: x87 control word at 0, MXCSR at 28; MXCSR bits 0-5 are status flags
        out["x87_control"] = int.from_bytes(raw[0:2], "little")
        out["mxcsr_control"] = int.from_bytes(raw[28:32], "little") & 0xFFC0
    elif machine in ("aarch64", "arm64"):
        out["fpcr"] = int.from_bytes(raw[0:4], "little")
    return out


def _c_environ() -> dict[str, str]:
    env: dict[str, str] = {}
    ptr = ctypes.POINTER(ctypes.c_char_p).in_dll(_LIBC, "environ")
    i = 0
    while ptr[i] is not None:
        k, _, v = ptr[i].decode(errors="replace").partition("=")
        env[k] = v
        i += 1
    return env


def _signal_masks() -> dict[str, str]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, val = line.partition(":")
        if key in ("SigCgt", "SigIgn"):
            out[key] = val.strip()
    return out


def _omp_runtimes() -> list[tuple[str, Any]]:
    """(path, omp_get_max_threads) of every OpenMP runtime mapped into the process (torch bundles
    its own libgomp; L2 kernels link the system's)."""
    paths = set()
    for line in Path("/proc/self/maps").read_text().splitlines():
        p = line.split()[-1] if line.strip() else ""
        if "libgomp" in p or "libiomp" in p or "libomp" in p:
            paths.add(p)
    out = []
    for p in sorted(paths):
        try:
            out.append((p, ctypes.CDLL(p).omp_get_max_threads))
        except (OSError, AttributeError):
            pass
    return out


def _threads() -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        import torch

        out["torch.num_threads"] = torch.get_num_threads()
        out["torch.num_interop_threads"] = torch.get_num_interop_threads()
    except ImportError:
        pass
    return out


class Guard:
    """Snapshot now; `check()` raises if anything recorded has changed since."""

    def __init__(self, read_proc: bool = True) -> None:
        # read_proc False: a sandboxed worker (benchmark/judge/sandbox/control.py), which opens no file once its
        # filter is on; its signal masks are its own business there
        self.read_proc = read_proc
        self._omp = _omp_runtimes()
        self.before = self.snapshot()

    def snapshot(self) -> dict[str, Any]:
        snap: dict[str, Any] = {
            "cpu_affinity": sorted(os.sched_getaffinity(0)),
            "sched_policy": os.sched_getscheduler(0),
            "priority": os.getpriority(os.PRIO_PROCESS, 0),
            **_threads(),
            **{f"omp_max_threads[{Path(p).name}]": int(f()) for p, f in self._omp},
            **{f"fp.{k}": v for k, v in _fp_env().items()},
            **(_signal_masks() if self.read_proc else {}),
        }
        snap["environ"] = _c_environ()
        return snap

    def check(self) -> None:
        now = self.snapshot()
        changed = []
        for key, old in self.before.items():
            new = now.get(key)
            if key == "environ":
                keys = sorted(k for k in set(old) | set(new or {}) if old.get(k) != (new or {}).get(k))
                if keys:
                    changed.append("environment variable(s) " + ", ".join(
                        f"{k}: {old.get(k)!r} -> {(new or {}).get(k)!r}" for k in keys[:5]))
            elif new != old:
                changed.append(f"{key}: {_fmt(old)} -> {_fmt(new)}")
        if changed:
            raise ProcessStateChanged("the candidate changed process-wide state that its baseline's "
                                      "turn would inherit: " + "; ".join(changed))


def _fmt(v: Any) -> str:
    if isinstance(v, int) and v > 255:
        return hex(v)
    if isinstance(v, list) and len(v) > 8:
        return f"{len(v)} CPUs {v[:4]}..."
    return repr(v)
