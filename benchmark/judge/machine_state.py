"""The platform a timing ran on (issue 43): CPU frequency governor, turbo / boost, SMT and the siblings
of the cores used, their frequency before and after the timing, steal time (benchmark/judge/load.py's), and
on a GPU its clocks and whether they are locked. Into `EvalResult.extra["platform"]` for every timed
evaluation, with `moved` (the reasons the machine's state changed while it timed) or None.

Every source may be missing (a VM without cpufreq, a container without /sys, no nvidia-smi): a
missing one is None ("unavailable" for the GPU), never an exception. No tvm or torch import.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

CPU = Path("/sys/devices/system/cpu")
CPUINFO = Path("/proc/cpuinfo")
# a timing whose cores' mean frequency moved by more than this between its start and end ran on a
# different machine at the end than at the start (turbo budget spent, a governor ramping, a thermal
# limit): 10% is above the jitter of one /proc/cpuinfo read on an idle VM (under 1%) and below the
# 20-40% of a turbo step
FREQ_MOVED = 0.10
# steal over this share of one core for the timing's wall time: the hypervisor took cores from us
# (load.py marks `loaded` at 25% of other processes' CPU plus steal; steal alone is rarer and worse:
# it stops the timed thread itself)
STEAL_MOVED = 0.05
_SMI_FIELDS = "name,clocks.sm,clocks.mem,clocks.max.sm,clocks.applications.graphics,{}.active"
# drivers before 535 call the clock-event reasons throttle reasons; an unknown field fails the query
_SMI_REASONS = ("clocks_event_reasons", "clocks_throttle_reasons")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def cores() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


def governors(cpus: list[int]) -> dict[int, str] | None:
    got = {c: g for c in cpus if (g := _read(CPU / f"cpu{c}" / "cpufreq" / "scaling_governor")) is not None}
    return got or None


def turbo() -> bool | None:
    """Whether the CPU may run above its base clock: intel_pstate's no_turbo (0 = turbo on), else
    cpufreq's boost (1 = on); None where neither is exposed."""
    nt = _read(CPU / "intel_pstate" / "no_turbo")
    if nt in ("0", "1"):
        return nt == "0"
    b = _read(CPU / "cpufreq" / "boost")
    return b == "1" if b in ("0", "1") else None


def smt(cpus: list[int]) -> dict[str, Any]:
    """SMT on (smt/active) and the hardware threads sharing a core with each core used: two timed
    threads on siblings share one core's units."""
    active = _read(CPU / "smt" / "active")
    sib = {c: s for c in cpus if (s := _read(CPU / f"cpu{c}" / "topology" / "thread_siblings_list")) is not None}
    return {"active": None if active not in ("0", "1") else active == "1", "siblings": sib or None}


def freqs_mhz(cpus: list[int]) -> dict[int, float] | None:
    """Each core's current frequency: cpufreq's scaling_cur_freq (kHz), else /proc/cpuinfo's
    "cpu MHz" of that processor (what a VM without cpufreq shows: often the nominal clock)."""
    out: dict[int, float] = {}
    for c in cpus:
        khz = _read(CPU / f"cpu{c}" / "cpufreq" / "scaling_cur_freq")
        if khz and khz.isdigit():
            out[c] = int(khz) / 1000.0
    if out:
        return out
    text = _read(CPUINFO)
    if text is None:
        return None
    proc = None
    for line in text.splitlines():
        key, _, val = line.partition(":")
        key = key.strip()
        if key == "processor":
            proc = int(val) if val.strip().isdigit() else None
        elif key == "cpu MHz" and proc in cpus:
            try:
                out[proc] = float(val)
            except ValueError:
                pass
    return out or None


def gpu_clocks(timeout_s: float = 5.0) -> list[dict[str, Any]] | str:
    """Per GPU: name, SM and memory clocks now, the SM's maximum, the application clock, the active
    clock-event mask, and `locked`: the clocks held where the application setting put them (event
    bit 0x2, applications clocks setting; `nvidia-smi -lgc` / `-ac` set it), else None. "unavailable"
    without nvidia-smi or an answer from it."""
    smi = shutil.which("nvidia-smi")
    text = None
    for reasons in _SMI_REASONS if smi else ():
        try:
            out = subprocess.run([smi, f"--query-gpu={_SMI_FIELDS.format(reasons)}", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=timeout_s, check=False)
        except (OSError, subprocess.SubprocessError):
            return "unavailable"
        if out.returncode == 0 and out.stdout.strip():
            text = out.stdout
            break
    if text is None:
        return "unavailable"
    rows = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 6:
            continue
        name, sm, mem, max_sm, app, reasons = parts
        mask = int(reasons, 16) if reasons.lower().startswith("0x") else None
        rows.append({"name": name, "sm_mhz": _num(sm), "mem_mhz": _num(mem), "max_sm_mhz": _num(max_sm),
                     "app_mhz": _num(app), "events": reasons,
                     "locked": None if mask is None else bool(mask & 0x2)})
    return rows or "unavailable"


def _num(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def snapshot(gpu: bool = False) -> dict[str, Any]:
    """The platform now, for the cores this process may run on."""
    cpus = cores()
    snap: dict[str, Any] = {"cores": cpus, "governor": governors(cpus), "turbo": turbo(), "smt": smt(cpus),
                            "mhz": freqs_mhz(cpus)}
    if gpu:
        snap["gpu"] = gpu_clocks()
    return snap


def _mean(d: dict[int, float] | None) -> float | None:
    return sum(d.values()) / len(d) if d else None


def moved(before: dict[str, Any], after: dict[str, Any], load: dict[str, Any] | None) -> str | None:
    """Why the machine's state moved between two snapshots (and the timing's load), or None."""
    why = []
    if before.get("governor") != after.get("governor"):
        why.append(f"governor {before.get('governor')} -> {after.get('governor')}")
    if before.get("turbo") != after.get("turbo"):
        why.append(f"turbo {before.get('turbo')} -> {after.get('turbo')}")
    f0, f1 = _mean(before.get("mhz")), _mean(after.get("mhz"))
    if f0 and f1 and abs(f1 - f0) / f0 > FREQ_MOVED:
        why.append(f"frequency {f0:.0f} -> {f1:.0f} MHz (over {FREQ_MOVED:.0%})")
    if load and load.get("wall_s"):
        share = float(load.get("steal_s") or 0.0) / float(load["wall_s"])
        if share > STEAL_MOVED:
            why.append(f"steal {share:.0%} of a core (over {STEAL_MOVED:.0%})")
    return "; ".join(why) or None


def around(before: dict[str, Any] | None, after: dict[str, Any] | None,
           load: dict[str, Any] | None) -> dict[str, Any] | None:
    """`extra["platform"]`: the state at the start, the frequencies (and GPU clocks) at the end, the
    steal, and `moved`."""
    if before is None or after is None:
        return None
    rec = {**before, "mhz_after": after.get("mhz"),
           "steal_s": None if load is None else load.get("steal_s"), "moved": moved(before, after, load)}
    if "gpu" in after:
        rec["gpu_after"] = after["gpu"]
    return rec


def line(p: dict[str, Any] | None) -> str:
    """One line for a report: governor, turbo, SMT, frequency before -> after, steal, GPU, moved."""
    if not p:
        return "platform: not recorded"
    gov = sorted(set((p.get("governor") or {}).values())) or ["unavailable"]
    turbo_s = {True: "on", False: "off", None: "unavailable"}[p.get("turbo")]
    smt_s = {True: "on", False: "off", None: "unavailable"}[(p.get("smt") or {}).get("active")]
    f0, f1 = _mean(p.get("mhz")), _mean(p.get("mhz_after"))
    freq = f"{f0:.0f} -> {f1:.0f} MHz" if f0 and f1 else "frequency unavailable"
    steal = "-" if p.get("steal_s") is None else f"{p['steal_s']:.2f} s"
    parts = [f"governor {'/'.join(gov)}", f"turbo {turbo_s}", f"SMT {smt_s}", freq, f"steal {steal}"]
    g = p.get("gpu_after", p.get("gpu"))
    if isinstance(g, list) and g:
        parts.append("GPU " + ", ".join(f"{x.get('sm_mhz')} MHz SM, locked {x.get('locked')}" for x in g))
    elif g is not None:
        parts.append(f"GPU clocks {g}")
    parts.append(f"moved: {p['moved']}" if p.get("moved") else "steady")
    return "; ".join(parts)
