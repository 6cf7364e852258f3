"""L1, the schedule level: its state (`L1State`: {structural hash of an unscheduled PrimFunc -> a
schedule trace of leka.ir.sched, or a whole replacement TIR}), its lowering stage (the entries, then
DLight for the rest on GPUs), its edit handlers ("trace", "traces", "tir_text"), its files in a
candidate folder (`l1/<primfunc>.json`, `l1/<primfunc>.tir.py`) and its carry-forward (an entry stays
while its PrimFunc's unscheduled form still occurs after an L0 edit)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from leka import ir
from leka import tvm_adapter as A
from leka.core.types import Edit
from leka.ir import Candidate, sched
from leka.ir.edits import EditError, EditOutcome, target_for
from leka.ir.levels import CandidateFilesError, free_path


class L1Entry(BaseModel):
    model_config = ConfigDict(frozen=True)

    func: str  # PrimFunc name when the entry was made (names can change; the key is the hash)
    trace: list[dict[str, Any]] | None = None
    tir_text: str | None = None


class L1State(BaseModel):
    """L1's decisions on a candidate (`Candidate.levels["L1"]`, read as `c.l1`)."""

    model_config = ConfigDict(frozen=True)

    entries: dict[str, L1Entry] = Field(default_factory=dict)

    def digest_parts(self) -> list[bytes]:
        # always, even empty: the digest of a candidate is what it was before levels were a table
        return [json.dumps({k: v.model_dump() for k, v in sorted(self.entries.items())}, sort_keys=True).encode()]


# ----------------------------------------------------------------------------- lowering
def l1_function(entry: L1Entry, func):
    """The scheduled PrimFunc an L1 entry makes of the unscheduled `func`."""
    if entry.tir_text:
        new = A.parse_tir(entry.tir_text)
        ir.check_same_signature(func, new)
        return new
    return sched.apply_trace(func, entry.trace or [])


def stage(lw) -> None:
    """L1's lowering stage (leka.ir.candidate.Lowering): its entries (marked scheduled on GPUs, which
    DLight skips), then DLight for the rest."""
    gpu = A.is_gpu(lw.target)
    for name, key in lw.l1_keys.items():
        entry = lw.candidate.l1.get(key)
        if entry is None:
            continue
        new = l1_function(entry, lw.unscheduled[name])
        if gpu:
            new = A.mark_scheduled(new)
        lw.mod = A.replace_prim_func(lw.mod, name, new)
        lw.applied_l1.append(key)
    if gpu:
        lw.mod = A.gpu_default_schedule(lw.mod, lw.target)


def carry(old: Candidate, new: Candidate, target, root_params) -> tuple[L1State, list[str], list[str]]:
    """`old`'s entries on `new` (whose L0 differs): those whose key still occurs, renamed to its name."""
    base = ir.lower_layers(new, target, root_params)
    by_key = {k: n for n, k in base.l1_keys.items()}
    entries: dict[str, L1Entry] = {}
    carried: list[str] = []
    invalidated: list[str] = []
    for key, e in old.l1.items():
        if key in by_key:
            entries[key] = e.model_copy(update={"func": by_key[key]})
            carried.append(f"L1:{key}:{by_key[key]}")
        else:
            invalidated.append(f"L1:{key}:{e.func}")
    return L1State(entries=entries), carried, invalidated


# ----------------------------------------------------------------------------- files
class L1Files:
    """`l1/<primfunc>.json` (a trace) or `l1/<primfunc>.tir.py` (a whole PrimFunc) per entry."""

    def write(self, c: Candidate, names: Mapping[str, str] | None, files: dict[str, str | bytes],
              record: bool) -> None:
        for key, e in c.l1.items():
            name = e.func if names is None else names.get(key)
            if name is not None:
                path = free_path(files, f"l1/{name}", ".tir.py" if e.tir_text else ".json", key)
                files[path] = e.tir_text if e.tir_text else json.dumps(e.trace or [], indent=1)

    def names(self, layers) -> dict[str, str]:
        return {key: name for name, key in layers.l1_keys.items()}

    def edits(self, folder: Path) -> list[tuple[str, Edit]]:
        out: list[tuple[str, Edit]] = []
        for p in sorted((folder / "l1").glob("*")) if (folder / "l1").is_dir() else []:
            if p.name.endswith(".tir.py"):
                out.append((f"l1/{p.name}", Edit(level="L1", kind="tir_text", target=p.name[:-7],
                                                  payload={"text": p.read_text()})))
            elif p.suffix == ".json":
                try:
                    trace = json.loads(p.read_text())
                except json.JSONDecodeError as e:
                    raise CandidateFilesError(f"l1/{p.name}: not JSON ({e})") from e
                out.append((f"l1/{p.name}", Edit(level="L1", kind="trace", target=p.stem,
                                                  payload={"trace": trace, "append": False})))
            elif p.is_file():
                raise CandidateFilesError(f"l1/{p.name}: expected <primfunc>.json (trace) or <primfunc>.tir.py")
        return out


FILES = L1Files()


# ----------------------------------------------------------------------------- edits
def func_of(layers: ir.Layers, name: str | None, which: str):
    mod = layers.unscheduled if which == "unscheduled" else layers.scheduled
    funcs = A.prim_funcs(mod)
    if not name or name not in funcs:
        raise EditError(f"no PrimFunc {name!r} in the lowered module; PrimFuncs: {sorted(funcs)}")
    return funcs[name]


def _check_l1_func(func, target, what: str) -> None:
    try:
        A.build_prim_func(func, target)
    except Exception as e:  # noqa: BLE001
        raise EditError(f"{what} does not compile for {target.kind.name}: {A.error_text(e)}") from e


def _check_gpu_bound(func, target, name: str) -> None:
    # DLight skips a PrimFunc with an L1 entry, so the trace itself must bind threads; TVM's
    # single-function build does not always catch an unbound loop nest
    if "blockIdx" not in func.script() or "threadIdx" not in func.script():
        raise EditError(f"the scheduled {name} does not compile for {target.kind.name}: no loop is bound to "
                        "blockIdx/threadIdx (add 'bind' steps: a GPU schedule must bind its outer loops)")


def _scheduled(func, trace: list, target, name: str):
    """The unscheduled `func` after `trace`, checked as a trace edit checks it; EditError otherwise."""
    try:
        new = sched.apply_trace(func, trace)
    except sched.TraceError as e:
        detail = A.error_text(e.__cause__, 1500) if e.__cause__ is not None else ""
        # TVM's ScheduleError ends with the useful line ("Cannot find a block with the name: x")
        last = [ln for ln in detail.splitlines() if ln.strip()][-1:] if detail else []
        raise EditError(f"trace on {name}: {e}" + (f"\n{last[0]}" if last else "")) from e
    gpu = A.is_gpu(target)  # DLight skips a scheduled PrimFunc: the trace must bind threads itself
    if gpu:
        _check_gpu_bound(new, target, name)
    _check_l1_func(A.mark_scheduled(new) if gpu else new, target, f"the scheduled {name}")
    return new


def trace_error(func, trace: list, target, name: str) -> str | None:
    """Why a trace edit of `trace` on the unscheduled `func` would be refused (None: it applies and
    compiles): what an agent asks before putting a kernel's schedule into a batched edit."""
    try:
        _scheduled(func, trace, target, name)
    except EditError as e:
        return str(e)
    return None


def _drop_stale_l2(c: Candidate, layers: ir.Layers, names) -> tuple[dict[str, Any], list[str]]:
    # the old scheduled PrimFunc's L2 override no longer applies once its schedule changes
    l2, inv = dict(c.l2), []
    for name in names:
        key = layers.l2_keys.get(name)
        if key in l2:
            del l2[key]
            inv.append(f"L2:{key}:{name}")
    return l2, inv


def apply_trace(c: Candidate, edit: Edit, workdir: Path, root_params) -> EditOutcome:
    trace = edit.payload.get("trace")
    if not isinstance(trace, list) or not trace:
        raise EditError("trace edit needs payload {'trace': [ {'prim': ..., 'args': [...]}, ... ]}")
    target = target_for(c)
    layers = ir.lower_layers(c, target, root_params)
    old = c.l1.get(layers.l1_keys.get(edit.target or ""))
    if edit.payload.get("append") and old is not None and old.trace:
        trace = list(old.trace) + list(trace)
    return _schedule_kernels(c, layers, target, {edit.target: trace})


def apply_traces(c: Candidate, edit: Edit, workdir: Path, root_params) -> EditOutcome:
    """Each kernel's trace, as one edit: a Level-3 graph of dozens of unscheduled kernels gets its
    first schedules in one evaluation instead of one per kernel."""
    traces = edit.payload.get("traces")
    if not isinstance(traces, dict) or not traces:
        raise EditError("traces edit needs payload {'traces': {KERNEL: [ {'prim': ..., 'args': [...]}, ... ], ...}}")
    target = target_for(c)
    return _schedule_kernels(c, ir.lower_layers(c, target, root_params), target, traces)


def _schedule_kernels(c: Candidate, layers: ir.Layers, target, traces: dict) -> EditOutcome:
    """The candidate with an L1 entry per kernel of `traces`, each checked against the one lowering of
    `c` (the unscheduled PrimFuncs do not change with L1 entries)."""
    l1 = dict(c.l1)
    for name, trace in traces.items():
        _scheduled(func_of(layers, name, "unscheduled"), trace, target, name)
        l1[layers.l1_keys[name]] = L1Entry(func=name, trace=trace)
    l2, inv = _drop_stale_l2(c, layers, traces)
    return EditOutcome(candidate=c.model_copy(update={"l1": l1, "l2": l2, "invalidated": inv}), invalidated=inv)


def apply_tir(c: Candidate, edit: Edit, workdir: Path, root_params) -> EditOutcome:
    text = edit.payload.get("text")
    if not isinstance(text, str) or not text.strip():
        raise EditError("tir_text edit needs payload {'text': <@T.prim_func TVMScript>}")
    target = target_for(c)
    layers = ir.lower_layers(c, target, root_params)
    func = func_of(layers, edit.target, "unscheduled")
    key = layers.l1_keys[edit.target]
    try:
        new = A.parse_tir(text)
    except Exception as e:  # noqa: BLE001
        raise EditError(f"the TIR text does not parse: {A.error_text(e)}") from e
    try:
        ir.check_same_signature(func, new)
    except ValueError as e:
        raise EditError(str(e)) from e
    if A.is_gpu(target):
        _check_gpu_bound(new, target, edit.target)
    _check_l1_func(new, target, f"the new TIR of {edit.target}")
    l2, inv = _drop_stale_l2(c, layers, [edit.target])
    entry = L1Entry(func=edit.target, tir_text=text)
    return EditOutcome(candidate=c.model_copy(update={"l1": {**c.l1, key: entry}, "l2": l2, "invalidated": inv}),
                       invalidated=inv)
