"""L0, the graph level: the Relax module itself (`Candidate.relax_text`, `relax_json`, `params_file`),
so it keeps no state in `Candidate.levels`. Its edit kinds (leka.core.levels): "pass" (one graph pass
of `L0_PASSES`) and "relax_text" (the whole module); after either, the later levels' states are carried
forward onto the new module (`leka.ir.edits.carry_forward`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from leka import ir
from leka import tvm_adapter as A
from leka.core.types import Edit
from leka.ir import Candidate
from leka.ir.edits import L0_PASSES, EditError, EditOutcome, carry_forward, target_for


def _lift_and_save(mod, workdir: Path) -> tuple[str, str | None, str]:
    """(text, JSON record where the text is not exact, params file) of a pass's result."""
    lifted, vals = A.lift_consts(mod)
    text, module_json = A.relax_persisted(lifted)
    if module_json is not None:  # (exact text has parsed already)
        A.parse_module(text)  # the new L0 text must re-parse, or no agent can edit it further
    return text, module_json, ir.save_params(vals, workdir / "params")


def apply_pass(c: Candidate, edit: Edit, workdir: Path, root_params) -> EditOutcome:
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


def apply_text(c: Candidate, edit: Edit, workdir: Path, root_params) -> EditOutcome:
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
