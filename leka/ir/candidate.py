"""A candidate: the graph and one mapping of per-level decisions (docs/DESIGN.md, "A candidate is the
graph and one state per level").

- L0: the Relax module as lifted-params TVMScript (constants are trailing parameters c0, c1, ...;
  their values live in an .npz, or come from the task's own model for the root). Where the printed
  text does not parse back to the very same module, TVM's JSON serialisation of it is kept beside the
  text (`relax_json`) and is what gets built; the text stays the agents' view.
- `levels`: {level name -> that level's state}, each of the model its `LevelSpec.state` names
  (leka/ir/levels/: L1's {structural hash of an unscheduled PrimFunc -> schedule trace or TIR text},
  L2's {structural hash of a scheduled PrimFunc -> target-source override} and codegen options); a
  level that decided nothing has no entry. `c.l1`, `c.l2`, `c.target_opts` read L1's and L2's, and
  `model_copy(update={"l1": ...})` writes them (the record's older form, with those keys, still loads).

A Candidate is a frozen, content-hashed record; building it is `build_candidate`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from leka import tvm_adapter as A
from leka.backends import get_backend
from leka.core.levels import LEVEL_SPECS, behaviour, get_level
from leka.core.task import Task
from leka.core.task import load_task_file as resolve

# the record's older form, one field per level: key -> (level, field of that level's state)
LEGACY_FIELDS = {"l1": ("L1", "entries"), "l2": ("L2", "entries"), "target_opts": ("L2", "options")}


def state_model(level: str) -> type[BaseModel]:
    """The pydantic model of a level's state (`LevelSpec.state`)."""
    spec = get_level(level)
    if not spec.state:
        raise ValueError(f"level {level} keeps no state of its own on a candidate")
    return behaviour(spec, "state")


def _states(levels: dict[str, Any]) -> dict[str, BaseModel]:
    """Each level's state as its model, in table order; a default (nothing decided) state is left out,
    so one decision set has one record."""
    out: dict[str, BaseModel] = {}
    unknown = [k for k in levels if k not in LEVEL_SPECS]
    if unknown:
        raise ValueError(f"state of unknown level(s) {unknown}; levels: {', '.join(LEVEL_SPECS)}")
    for name in LEVEL_SPECS:
        if name in levels:
            model = state_model(name)
            v = levels[name]
            st = v if isinstance(v, model) else model.model_validate(v)
            if st != model():
                out[name] = st
    return out


def _with_legacy(levels: dict[str, Any], legacy: dict[str, Any]) -> dict[str, Any]:
    """`levels` with the older form's fields (l1, l2, target_opts) written into their levels' states."""
    out = dict(levels)
    for key, value in legacy.items():
        level, fld = LEGACY_FIELDS[key]
        cur = out.get(level)
        model = state_model(level)
        cur = cur if isinstance(cur, model) else model.model_validate(cur or {})
        out[level] = cur.model_copy(update={fld: model.model_validate({fld: value}).__dict__[fld]})
    return out


class Candidate(BaseModel):
    model_config = ConfigDict(frozen=True)

    task: str
    task_path: str
    backend: str = "llvm"
    relax_text: str
    # TVM's serialisation of the module, only where `relax_text` does not parse back to an equal one
    # (A.relax_persisted); an L0 text edit makes the text the record again (None)
    relax_json: str | None = None
    params_file: str | None = None  # None: the task model's own (lifted) constants
    levels: dict[str, Any] = Field(default_factory=dict)  # level -> its state (LevelSpec.state), table order
    invalidated: list[str] = Field(default_factory=list)  # keys dropped by the last L0 edit

    @model_validator(mode="before")
    @classmethod
    def _older_form(cls, data: Any) -> Any:
        if isinstance(data, dict) and LEGACY_FIELDS.keys() & data.keys():
            data = dict(data)
            legacy = {k: data.pop(k) for k in list(data) if k in LEGACY_FIELDS}
            data["levels"] = _with_legacy(dict(data.get("levels") or {}), legacy)
        return data

    @field_validator("levels")
    @classmethod
    def _level_states(cls, v: dict[str, Any]) -> dict[str, Any]:
        return _states(v)

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Candidate:
        """As pydantic's, with `levels` kept in its one form, and the older fields (l1, l2, target_opts)
        written into their levels' states."""
        if update and (update.keys() & ({"levels"} | LEGACY_FIELDS.keys())):
            update = dict(update)
            legacy = {k: update.pop(k) for k in list(update) if k in LEGACY_FIELDS}
            update["levels"] = _states(_with_legacy(dict(update.get("levels", self.levels)), legacy))
        return super().model_copy(update=update, deep=deep)

    def state(self, level: str) -> Any:
        """The level's state (its model's default where it decided nothing)."""
        st = self.levels.get(level)
        return st if st is not None else state_model(level)()

    def with_state(self, level: str, state: Any) -> Candidate:
        return self.model_copy(update={"levels": {**self.levels, level: state}})

    @property
    def bare(self) -> bool:
        """No level decided anything (a default state is left out of `levels`): every kernel is built as
        in the root, as after an L0 edit that invalidated every schedule."""
        return not self.levels

    @property
    def l1(self) -> dict[str, Any]:
        """L1's entries: {structural hash of an unscheduled PrimFunc -> L1Entry}."""
        return self.state("L1").entries

    @property
    def l2(self) -> dict[str, Any]:
        """L2's source overrides: {structural hash of a scheduled PrimFunc -> L2Entry}."""
        return self.state("L2").entries

    @property
    def target_opts(self) -> dict[str, Any]:
        """L2's compile-option edits (e.g. LLVM fast-math contraction): target attributes for the build."""
        return self.state("L2").options

    @property
    def digest(self) -> str:
        """Content hash of the decisions (not of where params live, only of their bytes). Each level's
        state adds its parts (`digest_parts` of its model, else its JSON where it decided something),
        so a candidate of L0-L2 decisions keeps the digest it had before levels were a table."""
        h = hashlib.sha256()
        h.update(self.backend.encode())
        h.update(self.relax_text.encode())
        if self.relax_json:  # only when set, so text-exact candidates keep their digests
            h.update(hashlib.sha256(self.relax_json.encode()).digest())
        h.update((params_digest(self.params_file) if self.params_file else "root").encode())
        for name, spec in LEVEL_SPECS.items():
            if not spec.state:
                continue
            st = self.state(name)
            parts = getattr(st, "digest_parts", None)
            if parts is not None:
                for part in parts():
                    h.update(part)
            elif name in self.levels:
                h.update(f"{name}:".encode() + json.dumps(st.model_dump(mode="json"), sort_keys=True).encode())
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
        a = np.ascontiguousarray(vals[k])
        # shape and dtype too: an NHWC edit turns a (128, 32, 1, 1) weight into (128, 1, 1, 32) with
        # the very same bytes, and must not get the NCHW candidate's file back
        h.update(f"{k}|{a.dtype.str}|{a.shape}".encode())
        h.update(a.tobytes())
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
    module_json: str | None = None  # where `text` does not round-trip exactly (A.relax_persisted)
    outputs: list[tuple[tuple[int, ...], str]] = field(default_factory=list)  # (shape, dtype) per output

    @property
    def output_bytes(self) -> int:
        return int(sum(int(np.prod(s)) * _itemsize(d) for s, d in self.outputs))


def _itemsize(dtype: str) -> int:
    try:
        return np.dtype(dtype).itemsize
    except TypeError:  # bfloat16, float8_*: the bits in the name
        bits = re.search(r"(\d+)", dtype)
        return max(1, int(bits.group(1)) // 8) if bits else 4


def import_root(task: Task) -> Root:
    model = task.make_model()
    inputs = task.make_inputs(0)
    mod = A.import_torch(model, inputs)
    lifted, vals = A.lift_consts(mod)
    text, module_json = A.relax_persisted(lifted)
    return Root(task=task, text=text, params=vals, n_inputs=len(inputs), model=model, module_json=module_json,
                outputs=A.output_specs(lifted))


def root_candidate(task: Task, backend: str = "llvm", root: Root | None = None) -> Candidate:
    root = root or import_root(task)
    return Candidate(task=task.id, task_path=str(task.path), backend=backend, relax_text=root.text,
                     relax_json=root.module_json)


def candidate_from_file(task: Task, path: str | Path, backend: str = "llvm") -> Candidate:
    """A TVMScript file in lifted-params form; `FILE.npz` beside it, if present, holds the params."""
    p = Path(path)
    npz = p.with_suffix(".npz")
    return Candidate(task=task.id, task_path=str(task.path), backend=backend, relax_text=p.read_text(),
                     params_file=str(npz.resolve()) if npz.exists() else None)


def relax_ir(c: Candidate):
    """The L0 module in lifted-params form (constants unbound): the JSON record if any, else the text."""
    return A.load_relax(c.relax_text, c.relax_json)


def relax_module(c: Candidate, root_params: dict[str, np.ndarray] | None = None):
    """The L0 module with its constants bound back: the unlowered Relax module."""
    mod = relax_ir(c)
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
    kernel_libs: list[str] = field(default_factory=list)  # kernel-cached build: each kernel's library
    l2_libs: list[str] = field(default_factory=list)  # sealed L2 libraries its JIT resolves (`load_l2`)
    kernels: dict[str, int] = field(default_factory=dict)  # kernel-cached build: {"cached": n, "built": n}


def build_candidate(c: Candidate, target, root_params: dict[str, np.ndarray] | None = None,
                    l2_dir: str | Path | None = None, for_rpc: bool = False,
                    kernel_cache: str | None = None, check_objects: bool = True) -> Built:
    """L0 text -> bind -> lower (each level's "lower" stage: L1 schedules, then DLight on GPUs) -> each
    level's "build" stage (L2 overrides) -> compile.
    Raises on failure; the evaluator turns that into an EvalResult. `for_rpc` makes a main that
    returns a 1-tuple return the tensor (RPC cannot index a remote tuple). `kernel_cache` (a folder;
    llvm, no L2 objects): kernels compiled before are loaded from it, new ones built into it
    (tvm_adapter/kernel_cache.py); the executable then cannot be exported (`export` builds anew).
    `check_objects`: compiled L2 objects are checked (leka/ir/l2_object.py; `L2.IllegalObject`); off
    only where the evaluator's `static_check` is off, to measure what an attack would have gained."""
    if c.target_opts:
        check_target_options(c)
        target = A.with_target_options(target, c.target_opts)
    layers = lower_layers(c, target, root_params)
    mod = layers.scheduled
    if for_rpc:
        mod = A.unwrap_single_output(mod)
    bw = Building(c, target.kind.name, layers, mod, l2_dir, check_objects)
    for spec in LEVEL_SPECS.values():
        if spec.stage and spec.phase == "build":
            behaviour(spec, "stage")(bw)
    mod, backend = bw.mod, bw.backend
    if bw.post:
        from leka.ir import l2 as L2

        with A.source_postproc(backend, bw.post):
            ex = A.build(mod, target)
        missing = [k for k, n in bw.post.hits.items() if n == 0]
        if missing:
            raise L2.L2Error(f"L2 kernel(s) {missing} not defined in the generated {backend} source")
    elif kernel_cache and get_backend(backend).kernel_cache and not bw.objects and not for_rpc:
        try:
            ex, hit, new, libs = A.build_with_kernel_cache(mod, target, kernel_cache)
            return Built(executable=ex, lowered=mod, applied_l1=layers.applied_l1, applied_l2=bw.applied_l2,
                         kernel_libs=libs, kernels={"cached": hit, "built": new})
        except Exception:  # noqa: BLE001 - whatever the cache cannot take, tvm.compile builds (and reports)
            ex = A.build(mod, target)
    else:
        ex = A.build(mod, target)
    return Built(executable=ex, lowered=mod, applied_l1=layers.applied_l1, applied_l2=bw.applied_l2,
                 extra_modules=bw.objects, l2_libs=bw.libs)


def load_l2(built: Built) -> Built:
    """Load the candidate's L2 libraries into this process, so its VM can run here. Never called by
    the judge, the CLI or the agent loop (a library's load-time code would run with their rights):
    the sandboxed worker loads them itself; tests, experiments and `evaluator.sandbox=false` call this."""
    from leka.ir import l2 as L2

    L2.load_libraries(built.l2_libs)
    return built


def check_target_options(c: Candidate) -> None:
    """Only the backend's `compile_options` (the edit's allow-list) reach the target: a candidate.json
    handed to the evaluator is not an edit, and an option such as LLVM's `cl-opt` sets the LLVM
    library's process-wide flags, which the baseline's codegen on the judge's other thread would read."""
    allowed = get_backend(c.backend).compile_options
    bad = sorted(set(c.target_opts) - allowed)
    if bad:
        raise ValueError(f"compile option(s) {bad} are not allowed for backend {c.backend}; "
                         f"allowed: {sorted(allowed)}")


@dataclass
class RunOptions:
    """How the candidate's program runs, as the levels of phase "run" set it (`run_options`): the
    sandboxed worker honours it (benchmark/isolated.py); the baseline's runs take the job's own."""

    threads: int  # compute threads of the worker: TVM's pool and OpenMP's (at most the job's)
    extra: dict[str, Any] = field(default_factory=dict)  # what a level records of its options


def run_options(c: Candidate, threads: int) -> RunOptions:
    """The options of `c`'s runs on a job of `threads` threads: each "run" level's stage in table order;
    the threads stay between 1 and the job's (a level may ask for fewer, never for more)."""
    ro = RunOptions(threads=int(threads))
    for spec in LEVEL_SPECS.values():
        if spec.stage and spec.phase == "run":
            behaviour(spec, "stage")(c, ro)
    ro.threads = max(1, min(int(threads), int(ro.threads)))
    return ro


# ============================================================================ layers: lowering
@dataclass
class Layers:
    """One candidate lowered for one target, every layer's keys at hand."""

    unscheduled: Any  # after the zero pipeline: the PrimFuncs L1 entries are keyed by
    scheduled: Any  # L1 applied (and DLight on GPUs): the PrimFuncs L2 entries are keyed by
    l1_keys: dict[str, str]  # PrimFunc name -> structural hash of the unscheduled PrimFunc
    l2_keys: dict[str, str]  # PrimFunc name -> structural hash of the scheduled PrimFunc
    applied_l1: list[str] = field(default_factory=list)


@lru_cache(maxsize=8)
def _root_params_cached(task_path: str, digest: str) -> dict[str, np.ndarray]:
    return import_root(resolve(task_path)).params


def candidate_params(c: Candidate, root_params: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    if c.params_file:
        return load_params(c.params_file)
    if root_params is not None:
        return root_params
    task = c.load_task()
    return _root_params_cached(str(task.path), task.digest)


_LOWER_CACHE: dict[tuple[str, str, str], Any] = {}


def _zero_lowered(c: Candidate, target, root_params) -> Any:
    # lowering is deterministic in (L0 text, params, target): carry-forward and the views re-ask often
    key = (hashlib.sha256((c.relax_text + (c.relax_json or "")).encode()).hexdigest(),
           params_digest(c.params_file) if c.params_file else f"root:{c.task_path}:{id(root_params) if root_params is not None else 0}",
           str(target))
    if key not in _LOWER_CACHE:
        if len(_LOWER_CACHE) > 16:
            _LOWER_CACHE.pop(next(iter(_LOWER_CACHE)))
        mod = A.bind_params(relax_ir(c), candidate_params(c, root_params))
        _LOWER_CACHE[key] = A.lower(mod, target, gpu_schedule=False)
    return _LOWER_CACHE[key]


def unscheduled_module(c: Candidate, target, root_params: dict[str, np.ndarray] | None = None) -> Any:
    """The candidate after the zero pipeline, before its L1 entries (and DLight on GPUs): the PrimFuncs
    an L1 edit is keyed by. From the lowering cache, so the loop lowers a candidate once for its edit,
    its views and its agents alike."""
    return _zero_lowered(c, target, root_params)


def check_same_signature(old, new) -> None:
    a, b = A.buffer_signature(old), A.buffer_signature(new)
    if [(s, d) for _, s, d in a] != [(s, d) for _, s, d in b]:
        raise ValueError("the replacement PrimFunc's buffer parameters differ from the original's: "
                         f"expected {[(list(s), d) for _, s, d in a]}, got {[(list(s), d) for _, s, d in b]}")


@dataclass
class Lowering:
    """What the levels' lowering stages (LevelSpec.stage, phase "lower") share: each one reads the
    candidate and replaces `mod`, the module so far."""

    candidate: Candidate
    target: Any
    unscheduled: Any  # after the zero pipeline
    mod: Any
    l1_keys: dict[str, str]  # PrimFunc name -> structural hash of its unscheduled form
    applied_l1: list[str] = field(default_factory=list)


@dataclass
class Building:
    """What the levels' build stages (LevelSpec.stage, phase "build") share, after the lowering: each
    may replace `mod`, add objects to link and libraries to load, or a postproc on the generated
    source (`post`, with `post.hits`: kernel -> definitions spliced)."""

    candidate: Candidate
    backend: str  # the target's kind
    layers: Layers
    mod: Any
    l2_dir: str | Path | None = None
    check_objects: bool = True
    objects: list[str] = field(default_factory=list)
    libs: list[str] = field(default_factory=list)
    applied_l2: list[str] = field(default_factory=list)
    post: Any = None


def lower_layers(c: Candidate, target, root_params: dict[str, np.ndarray] | None = None) -> Layers:
    """The zero pipeline, then each "lower" level's stage in the table's order (L1: its entries, DLight
    for the rest on GPUs; L2 is applied at build, `build_candidate`)."""
    base = _zero_lowered(c, target, root_params)
    lw = Lowering(c, target, base, base, {name: A.structural_hash(f) for name, f in A.prim_funcs(base).items()})
    for spec in LEVEL_SPECS.values():
        if spec.stage and spec.phase == "lower":
            behaviour(spec, "stage")(lw)
    l2_keys = {name: A.structural_hash(f) for name, f in A.prim_funcs(lw.mod).items()}
    return Layers(unscheduled=base, scheduled=lw.mod, l1_keys=lw.l1_keys, l2_keys=l2_keys, applied_l1=lw.applied_l1)


def lowered_module(c: Candidate, target, root_params: dict[str, np.ndarray] | None = None) -> tuple[Any, dict[str, str]]:
    """The lowered, L1-scheduled module and {PrimFunc name -> L1 key} (the hash of the unscheduled
    PrimFunc). The L2 key of a PrimFunc is `A.structural_hash(mod[name])` of the returned module
    (also in `lower_layers(...).l2_keys`)."""
    layers = lower_layers(c, target, root_params)
    return layers.scheduled, layers.l1_keys


def export(built: Built, path: str | Path, cross_compiler: str = "") -> str:
    """A deployable .so (L2 objects linked in) that loads in a fresh process with
    `tvm.runtime.load_module` + `relax.VirtualMachine`."""
    opts = list(built.extra_modules)
    if opts:
        opts.append("-fopenmp")  # the hand-written kernels may use OpenMP
    A.export_library(built.executable, str(path), options=opts, cross_compiler=cross_compiler)
    return str(path)
