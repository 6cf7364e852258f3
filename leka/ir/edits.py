"""Edit operations on a Candidate, with legality checks and carry-forward. The handlers of the levels'
edit kinds are each level's own (leka/ir/levels/: l0.py, l1.py, l2.py; each level's spec in
leka.core.levels names its handlers); this module applies them and carries the level states forward.

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

from pydantic import BaseModel, ConfigDict

from leka import ir
from leka import tvm_adapter as A
from leka.core.levels import LEVEL_SPECS, behaviour, resolve
from leka.core.types import BudgetExhausted, Edit, edit_digest
from leka.ir import Candidate
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


def carry_forward(old: Candidate, new: Candidate, *, root_params=None) -> EditOutcome:
    """`old`'s level states on `new`, whose L0 differs: each level with a state, in table order, carries
    its own (`LevelSpec.carry`; L1 and L2 keep the entries whose key still occurs) onto `new` with the
    levels above it carried already; a level without a carry hook keeps its state as it is."""
    target = target_for(new)
    cur = new.model_copy(update={"levels": {}})
    carried: list[str] = []
    invalidated: list[str] = []
    for name, spec in LEVEL_SPECS.items():
        if not spec.state:
            continue
        if spec.carry is None:
            if name in old.levels:
                cur = cur.with_state(name, old.levels[name])
            continue
        state, kept, dropped = behaviour(spec, "carry")(old, cur, target, root_params)
        cur = cur.with_state(name, state)
        carried += kept
        invalidated += dropped
    out = cur.model_copy(update={"invalidated": invalidated})
    return EditOutcome(candidate=out, carried=carried, invalidated=invalidated)


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
