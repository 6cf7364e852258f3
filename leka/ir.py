"""A candidate as three layers of decisions (DESIGN.md, "A candidate is three layers of decisions").

- L0: the Relax module as lifted-params TVMScript (constants are trailing parameters c0, c1, ...;
  their values live in an .npz, or come from the task's own model for the root).
- L1: {structural hash of an unscheduled PrimFunc -> schedule trace (leka.sched) or TIR text}.
- L2: {structural hash of a scheduled PrimFunc -> target-source override}.

A Candidate is a frozen, content-hashed record; building it is `build_candidate`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from benchmark.task import Task, resolve
from leka import sched
from leka import tvm_adapter as A


class L1Entry(BaseModel):
    model_config = ConfigDict(frozen=True)

    func: str  # PrimFunc name when the entry was made (names can change; the key is the hash)
    trace: list[dict[str, Any]] | None = None
    tir_text: str | None = None


class L2Entry(BaseModel):
    model_config = ConfigDict(frozen=True)

    kernel: str
    language: Literal["cpp", "llvm", "cuda", "opencl"]
    text: str
    entry: str | None = None  # exported symbol, where the language needs one


class Candidate(BaseModel):
    model_config = ConfigDict(frozen=True)

    task: str
    task_path: str
    backend: str = "llvm"
    relax_text: str
    params_file: str | None = None  # None: the task model's own (lifted) constants
    l1: dict[str, L1Entry] = Field(default_factory=dict)
    l2: dict[str, L2Entry] = Field(default_factory=dict)
    invalidated: list[str] = Field(default_factory=list)  # keys dropped by the last L0 edit

    @property
    def digest(self) -> str:
        """Content hash of the decisions (not of where params live, only of their bytes)."""
        h = hashlib.sha256()
        h.update(self.backend.encode())
        h.update(self.relax_text.encode())
        h.update((params_digest(self.params_file) if self.params_file else "root").encode())
        h.update(json.dumps({k: v.model_dump() for k, v in sorted(self.l1.items())}, sort_keys=True).encode())
        h.update(json.dumps({k: v.model_dump() for k, v in sorted(self.l2.items())}, sort_keys=True).encode())
        return h.hexdigest()[:20]

    def load_task(self) -> Task:
        return resolve(self.task_path)


@lru_cache(maxsize=64)
def params_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def save_params(vals: dict[str, np.ndarray], directory: str | Path) -> str:
    """Content-addressed .npz: identical parameter sets share one file."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    for k in sorted(vals):
        h.update(k.encode())
        h.update(np.ascontiguousarray(vals[k]).tobytes())
    path = d / f"{h.hexdigest()[:16]}.npz"
    if not path.exists():
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, **vals)
        tmp.replace(path)
    return str(path)


def load_params(path: str) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


@dataclass
class Root:
    """The imported task: lifted module, its constants, and the reference model."""

    task: Task
    text: str
    params: dict[str, np.ndarray]
    n_inputs: int
    model: Any = field(repr=False)


def import_root(task: Task) -> Root:
    model = task.make_model()
    inputs = task.make_inputs(0)
    mod = A.import_torch(model, inputs)
    lifted, vals = A.lift_consts(mod)
    return Root(task=task, text=A.relax_text(lifted), params=vals, n_inputs=len(inputs), model=model)


def root_candidate(task: Task, backend: str = "llvm", root: Root | None = None) -> Candidate:
    root = root or import_root(task)
    return Candidate(task=task.id, task_path=str(task.path), backend=backend, relax_text=root.text)


def candidate_from_file(task: Task, path: str | Path, backend: str = "llvm") -> Candidate:
    """A TVMScript file in lifted-params form; `FILE.npz` beside it, if present, holds the params."""
    p = Path(path)
    npz = p.with_suffix(".npz")
    return Candidate(task=task.id, task_path=str(task.path), backend=backend, relax_text=p.read_text(),
                     params_file=str(npz.resolve()) if npz.exists() else None)


def relax_module(c: Candidate, root_params: dict[str, np.ndarray] | None = None):
    """Parse the L0 text and bind its constants back: the unlowered Relax module."""
    mod = A.parse_module(c.relax_text)
    vals = load_params(c.params_file) if c.params_file else root_params
    if vals is None:
        vals = import_root(c.load_task()).params
    return A.bind_params(mod, vals)


@dataclass
class Built:
    executable: Any
    lowered: Any  # the lowered, scheduled IRModule that was compiled
    applied_l1: list[str] = field(default_factory=list)
    applied_l2: list[str] = field(default_factory=list)
    extra_modules: list[Any] = field(default_factory=list)


def apply_l1(mod, c: Candidate) -> tuple[Any, list[str]]:
    applied = []
    if not c.l1:
        return mod, applied
    for name, f in A.prim_funcs(mod).items():
        key = A.structural_hash(f)
        entry = c.l1.get(key)
        if entry is None:
            continue
        new = A.parse_tir(entry.tir_text) if entry.tir_text else sched.apply_trace(f, entry.trace or [])
        mod = A.replace_prim_func(mod, name, new)
        applied.append(key)
    return mod, applied


def build_candidate(c: Candidate, target, root_params: dict[str, np.ndarray] | None = None) -> Built:
    """L0 text -> bind -> lower -> L1 schedules -> compile (-> L2 overrides). Raises on failure;
    the evaluator turns that into an EvalResult."""
    mod = relax_module(c, root_params)
    lowered = A.lower(mod, target)
    lowered, applied = apply_l1(lowered, c)
    ex = A.build(lowered, target)
    return Built(executable=ex, lowered=lowered, applied_l1=applied)
