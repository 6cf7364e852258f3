"""Edit operations on a Candidate, with legality checks and carry-forward: the handlers of the built-in
levels' edit kinds (each level's spec in leka.core.levels names its handlers).

`apply_edit(candidate, edit, workdir=...)` parses and checks the edit, builds the result for the
candidate's backend, and returns an `EditOutcome`: the new candidate, or an error an agent can act on
(TVM's diagnostic with the offending line, the schedule primitive that failed, the compiler's first
error). It never raises, except BudgetExhausted / KeyboardInterrupt.

Edit kinds (leka.types.Edit):
- L0 "pass"       payload {"name": one of L0_PASSES}
- L0 "relax_text" payload {"text": lifted-params Relax TVMScript}
- L1 "trace"      target=PrimFunc name, payload {"trace": [...], "append": false}  (leka.sched DSL)
- L1 "traces"     payload {"traces": {PrimFunc name: [...], ...}}: several kernels scheduled in one edit
- L1 "tir_text"   target=PrimFunc name, payload {"text": "@T.prim_func ..."}
- L2 "source"     target=PrimFunc name, payload {"language": "cpp"|"c"|"llvm"|"cuda"|"opencl",
                  "text": ..., "entry": symbol (C/C++/LLVM) or kernel name (CUDA/OpenCL)}

PrimFunc names are those of `leka.ir.lowered_module(candidate, target)`. L1 entries are keyed by the
hash of the unscheduled PrimFunc, L2 entries by the hash of the scheduled one. After an L0 edit the
module is lowered again: entries whose key still occurs are carried, the others listed as
invalidated (strings "L1:<key>:<func>" / "L2:<key>:<func>").
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from leka import ir
from leka import tvm_adapter as A
from leka.backends import get_backend
from leka.core.levels import LEVEL_SPECS, resolve
from leka.core.types import BudgetExhausted, Edit, edit_digest
from leka.ir import Candidate, L1Entry, L2Entry, l2_guard, sched
from leka.ir import l2 as L2

L0_PASSES: dict[str, Callable] = dict(A.L0_PASS_FNS)


class EditOutcome(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    candidate: Candidate | None = None
    error: str | None = None
    error_kind: str | None = None  # an EvalResult error_kind for the failed node: illegal_source, else compile
    carried: list[str] = []
    invalidated: list[str] = []

    @property
    def ok(self) -> bool:
        return self.candidate is not None and self.error is None


class EditError(Exception):
    """Internal: an edit is illegal; the message goes back to the agent."""

    def __init__(self, msg: str, kind: str | None = None):
        super().__init__(msg)
        self.kind = kind


def _fail(msg: str, kind: str | None = None) -> EditOutcome:
    return EditOutcome(candidate=None, error=msg, error_kind=kind)


def target_for(c: Candidate):
    return A.make_target(c.backend)


# (candidate digest, edit content, workdir, params) -> (outcome, whether it was build-checked).
# An LLM agent's legality check and the graph apply the same edit to the same candidate one after the
# other; at Level 3 each apply with a build check is seconds of parse + lower + codegen.
_MEMO: OrderedDict[tuple[str, str, str, int], tuple[EditOutcome, bool]] = OrderedDict()
_MEMO_SIZE = 64


def _memo_key(candidate: Candidate, edit: Edit, workdir: Path, root_params) -> tuple[str, str, str, int]:
    return (candidate.digest, edit_digest(edit), str(workdir.resolve()),
            id(root_params) if root_params is not None else 0)


def apply_edit(candidate: Candidate, edit: Edit, *, workdir: Path | str, root_params=None,
               build_check: bool = True) -> EditOutcome:
    """Parse, check and (with `build_check`) build one edit; failures come back as
    `EditOutcome.error`. The same edit on the same candidate is answered from a small memo, so a
    legality check followed by the real apply costs one build."""
    workdir = Path(workdir)
    key = _memo_key(candidate, edit, workdir, root_params)
    hit = _MEMO.get(key)
    if hit is not None and (hit[1] or not build_check or hit[0].error is not None):
        _MEMO.move_to_end(key)
        return hit[0].model_copy(deep=True)
    out = _apply_edit(candidate, edit, workdir, root_params, build_check)
    _MEMO[key] = (out, build_check)
    while len(_MEMO) > _MEMO_SIZE:
        _MEMO.popitem(last=False)
    return out.model_copy(deep=True)


def _apply_edit(candidate: Candidate, edit: Edit, workdir: Path, root_params, build_check: bool) -> EditOutcome:
    try:
        spec = LEVEL_SPECS.get(edit.level)
        if spec is None or edit.kind not in spec.edit_kinds:
            kinds = ", ".join(f"{lv}/{k}" for lv, s in LEVEL_SPECS.items() for k in s.edit_kinds)
            return _fail(f"unknown edit {edit.level}/{edit.kind}; supported: {kinds}")
        handler = _handler(edit.level, edit.kind)
        out = handler(candidate, edit, workdir, root_params)
        if build_check and out.candidate is not None:
            try:
                ir.build_candidate(out.candidate, target_for(out.candidate), root_params=root_params,
                                   l2_dir=workdir / "l2")
            except L2.IllegalObject as e:
                return _fail(str(e), "illegal_source")
            except Exception as e:  # noqa: BLE001 - a build failure is the edit's fault, as data
                return _fail(f"the edited candidate does not build: {A.error_text(e)}")
        return out
    except (BudgetExhausted, KeyboardInterrupt):
        raise
    except EditError as e:
        return _fail(str(e), e.kind)
    except Exception as e:  # noqa: BLE001 - never let an agent's edit crash the loop
        return _fail(A.error_text(e))


# ----------------------------------------------------------------------------- L0
def _lift_and_save(mod, workdir: Path) -> tuple[str, str | None, str]:
    """(text, JSON record where the text is not exact, params file) of a pass's result."""
    lifted, vals = A.lift_consts(mod)
    text, module_json = A.relax_persisted(lifted)
    if module_json is not None:  # (exact text has parsed already)
        A.parse_module(text)  # the new L0 text must re-parse, or no agent can edit it further
    return text, module_json, ir.save_params(vals, workdir / "params")


def _l0_pass(c: Candidate, edit: Edit, workdir: Path, root_params) -> EditOutcome:
    name = str(edit.payload.get("name", edit.target or ""))
    fn = L0_PASSES.get(name)
    if fn is None:
        raise EditError(f"unknown L0 pass {name!r}; available: {sorted(L0_PASSES)}")
    target = target_for(c)
    mod = ir.relax_module(c, ir.candidate_params(c, root_params))
    try:
        new = fn(mod, target)
    except Exception as e:  # noqa: BLE001
        raise EditError(f"L0 pass {name!r} failed: {A.error_text(e)}") from e
    if A.structural_equal(new, mod):
        raise EditError(f"L0 pass {name!r} changed nothing in this module (not applicable here)")
    text, module_json, params_file = _lift_and_save(new, workdir)
    fresh = Candidate(task=c.task, task_path=c.task_path, backend=c.backend, relax_text=text,
                      relax_json=module_json, params_file=params_file)
    return carry_forward(c, fresh, root_params=root_params)


def _l0_text(c: Candidate, edit: Edit, workdir: Path, root_params) -> EditOutcome:
    text = edit.payload.get("text")
    if not isinstance(text, str) or not text.strip():
        raise EditError("relax_text edit needs payload {'text': <Relax TVMScript>}")
    try:
        mod = A.parse_module(text)
    except Exception as e:  # noqa: BLE001
        raise EditError(f"the Relax text does not parse: {A.error_text(e)}") from e
    if "main" not in A.relax_functions(mod):
        raise EditError("the Relax text has no Relax function 'main'")
    old = ir.relax_ir(c)
    vals = ir.candidate_params(c, root_params)
    old_names, new_names = A.param_names(old), A.param_names(mod)
    n_in = len(old_names) - len([n for n in old_names if n in vals])
    if new_names[:n_in] != old_names[:n_in]:
        raise EditError(f"main's user inputs must stay {old_names[:n_in]}; got {new_names[:n_in]}")
    unknown = [n for n in new_names[n_in:] if n not in vals]
    if unknown:
        raise EditError(f"main's parameters {unknown} are neither user inputs nor known constants "
                        f"(constants available: {sorted(vals)[:40]})")
    for p in mod["main"].params[n_in:]:
        v = vals[p.name]
        shape = tuple(int(s) for s in p.ty.shape) if hasattr(p.ty, "shape") and p.ty.shape is not None else None
        if shape is not None and (shape != tuple(v.shape) or str(p.ty.dtype) != str(v.dtype)):
            raise EditError(f"parameter {p.name} is declared {list(shape)} {p.ty.dtype} but its value is "
                            f"{list(v.shape)} {v.dtype}")
    try:
        # (relax.analysis.well_formed says False even for freshly imported modules in 0.27, so the
        # type check and the build are the checks)
        bound = A.bind_params(mod, vals)
        bound_old = A.bind_params(old, vals)
        if not A.structural_equal(bound["main"].ret_ty, bound_old["main"].ret_ty):
            raise EditError(f"main's return type changed: was {bound_old['main'].ret_ty}, now {bound['main'].ret_ty}")
    except EditError:
        raise
    except Exception as e:  # noqa: BLE001
        raise EditError(f"the Relax text does not type-check: {A.error_text(e)}") from e
    if A.structural_equal(bound, bound_old):
        raise EditError("the Relax text is equivalent to the current one (nothing to do)")
    fresh = Candidate(task=c.task, task_path=c.task_path, backend=c.backend, relax_text=text,
                      params_file=c.params_file if c.params_file else _save_root(vals, c, workdir))
    return carry_forward(c, fresh, root_params=root_params)


def _save_root(vals: dict[str, np.ndarray], c: Candidate, workdir: Path) -> str:
    # the root's constants come from the task model; a derived candidate pins them in a file
    return ir.save_params(vals, workdir / "params")


def carry_forward(old: Candidate, new: Candidate, *, root_params=None) -> EditOutcome:
    """Re-key `old`'s L1/L2 entries on `new` (whose L0 differs): keep those whose key still occurs."""
    target = target_for(new)
    base = ir.lower_layers(new.model_copy(update={"l1": {}, "l2": {}}), target, root_params)
    carried: list[str] = []
    invalidated: list[str] = []
    by_key = {k: n for n, k in base.l1_keys.items()}
    l1: dict[str, L1Entry] = {}
    for key, e in old.l1.items():
        if key in by_key:
            l1[key] = e.model_copy(update={"func": by_key[key]})
            carried.append(f"L1:{key}:{by_key[key]}")
        else:
            invalidated.append(f"L1:{key}:{e.func}")
    with_l1 = new.model_copy(update={"l1": l1, "l2": {}})
    layers = ir.lower_layers(with_l1, target, root_params) if l1 else base
    by_key2 = {k: n for n, k in layers.l2_keys.items()}
    l2: dict[str, L2Entry] = {}
    for key, e in old.l2.items():
        if key in by_key2:
            l2[key] = e
            carried.append(f"L2:{key}:{by_key2[key]}")
        else:
            invalidated.append(f"L2:{key}:{e.kernel}")
    out = new.model_copy(update={"l1": l1, "l2": l2, "invalidated": invalidated})
    return EditOutcome(candidate=out, carried=carried, invalidated=invalidated)


# ----------------------------------------------------------------------------- L1
def _func_of(layers: ir.Layers, name: str | None, which: str):
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


def _drop_stale_l2(c: Candidate, layers: ir.Layers, names) -> tuple[dict[str, L2Entry], list[str]]:
    # the old scheduled PrimFunc's L2 override no longer applies once its schedule changes
    l2, inv = dict(c.l2), []
    for name in names:
        key = layers.l2_keys.get(name)
        if key in l2:
            del l2[key]
            inv.append(f"L2:{key}:{name}")
    return l2, inv


def _l1_trace(c: Candidate, edit: Edit, workdir: Path, root_params) -> EditOutcome:
    trace = edit.payload.get("trace")
    if not isinstance(trace, list) or not trace:
        raise EditError("trace edit needs payload {'trace': [ {'prim': ..., 'args': [...]}, ... ]}")
    target = target_for(c)
    layers = ir.lower_layers(c, target, root_params)
    old = c.l1.get(layers.l1_keys.get(edit.target or ""))
    if edit.payload.get("append") and old is not None and old.trace:
        trace = list(old.trace) + list(trace)
    return _schedule_kernels(c, layers, target, {edit.target: trace})


def _l1_traces(c: Candidate, edit: Edit, workdir: Path, root_params) -> EditOutcome:
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
        _scheduled(_func_of(layers, name, "unscheduled"), trace, target, name)
        l1[layers.l1_keys[name]] = L1Entry(func=name, trace=trace)
    l2, inv = _drop_stale_l2(c, layers, traces)
    return EditOutcome(candidate=c.model_copy(update={"l1": l1, "l2": l2, "invalidated": inv}), invalidated=inv)


def _l1_tir(c: Candidate, edit: Edit, workdir: Path, root_params) -> EditOutcome:
    text = edit.payload.get("text")
    if not isinstance(text, str) or not text.strip():
        raise EditError("tir_text edit needs payload {'text': <@T.prim_func TVMScript>}")
    target = target_for(c)
    layers = ir.lower_layers(c, target, root_params)
    func = _func_of(layers, edit.target, "unscheduled")
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


# ----------------------------------------------------------------------------- L2
def _l2_source(c: Candidate, edit: Edit, workdir: Path, root_params) -> EditOutcome:
    p = edit.payload
    lang, text, entry = p.get("language"), p.get("text"), p.get("entry")
    allowed = tuple(get_backend(c.backend).l2_languages)
    if lang not in allowed:
        raise EditError(f"language {lang!r} does not fit backend {c.backend}; use one of {list(allowed)}")
    if not isinstance(text, str) or not text.strip():
        raise EditError("source edit needs payload {'language', 'text', 'entry'}")
    if found := l2_guard.scan(lang, text):
        raise EditError(l2_guard.describe(found), "illegal_source")
    target = target_for(c)
    layers = ir.lower_layers(c, target, root_params)
    func = _func_of(layers, edit.target, "scheduled")
    key = layers.l2_keys[edit.target]
    if lang in get_backend(c.backend).l2_linked:
        if not entry:
            raise EditError("a C/C++/LLVM source needs payload 'entry': the exported symbol, e.g. "
                            + L2.cpp_prototype("my_kernel", A.buffer_signature(func)))
        try:
            comp = ir.compile_l2_source(lang, text, workdir / "l2")
            L2.check_symbol(comp, entry)
        except L2.IllegalObject as e:
            raise EditError(str(e), "illegal_source") from e
        except L2.L2Error as e:
            raise EditError(f"{e}\nexpected: {L2.cpp_prototype(entry, A.buffer_signature(func))}") from e
    else:
        kernel = entry or f"{edit.target}_kernel"
        if not L2._definitions(text, kernel, lang):
            raise EditError(f"the {lang} text must define the whole kernel {kernel!r} (signature and body)")
        entry = kernel
    new = c.model_copy(update={"l2": {**c.l2, key: L2Entry(kernel=edit.target, language=lang, text=text,
                                                              entry=entry)}, "invalidated": []})
    if get_backend(c.backend).cuda:
        _check_cuda(new, target, root_params, workdir)
    return EditOutcome(candidate=new)


def _check_cuda(c: Candidate, target, root_params, workdir: Path) -> None:
    """Build with the override spliced in and, where nvcc exists, compile the CUDA C for the arch."""
    try:
        built = ir.build_candidate(c, target, root_params=root_params, l2_dir=workdir / "l2")
    except Exception as e:  # noqa: BLE001
        raise EditError(f"the CUDA override does not build: {A.error_text(e)}") from e
    if not L2.nvcc_available():
        return
    src = A.runtime_source(built.executable)
    arch = str(target.attrs.get("arch", "sm_90"))
    try:
        A.nvcc_compile(src, arch=arch)
    except Exception as e:  # noqa: BLE001
        # TVM's message starts with the whole source; nvcc's "file(line): error: ..." lines (and
        # the offending line + caret after each) are what an agent needs
        lines = str(e).splitlines()
        picked = [ln for i, ln in enumerate(lines) for j in range(3)
                  if i - j >= 0 and ": error" in lines[i - j] and j < 3]
        msg = "\n".join(dict.fromkeys(picked)) if picked else A.error_text(e, 2500)
        raise EditError(f"nvcc rejects the CUDA source:\n{msg[:2500]}") from e


def _l2_options(c: Candidate, edit: Edit, workdir: Path, root_params) -> EditOutcome:
    """A compile-option edit: LLVM codegen attributes for the whole module (fast-math flags let LLVM
    contract mul+add into FMAs and reassociate reductions into vector accumulators)."""
    allowed = get_backend(c.backend).compile_options
    if not allowed:
        raise EditError(f"backend {c.backend} takes no compile_options edits (its record lists no codegen options)")
    opts = edit.payload.get("options")
    if not isinstance(opts, dict) or not opts:
        raise EditError('payload needs "options": {name: value}, e.g. {"fast-math-contract": true}')
    bad = sorted(set(opts) - allowed)
    if bad:
        raise EditError(f"unknown option(s) {bad}; allowed: {sorted(allowed)}")
    for k, v in opts.items():
        if k == "opt-level" and (not isinstance(v, int) or not 0 <= v <= 3):
            raise EditError("opt-level must be an integer 0..3")
        if k != "opt-level" and not isinstance(v, bool):
            raise EditError(f"{k} must be true or false")
    merged = {**c.target_opts, **opts}
    if merged == c.target_opts:
        raise EditError(f"options {opts} are already set: nothing changes")
    return EditOutcome(candidate=c.model_copy(update={"target_opts": merged, "invalidated": []}))


Handler = Callable[[Candidate, Edit, Path, Any], EditOutcome]


def handlers() -> dict[tuple[str, str], Handler]:
    """(level, kind) -> handler, as each level's spec names them (LevelSpec.edit_kinds)."""
    return {(lv, kind): _handler(lv, kind) for lv, spec in LEVEL_SPECS.items() for kind in spec.edit_kinds}


def _handler(level: str, kind: str) -> Handler:
    spec = LEVEL_SPECS[level]
    key = f"handler:{kind}"
    if key not in spec._resolved:
        spec._resolved[key] = resolve(spec.edit_kinds[kind].handler)
    return spec._resolved[key]
