"""A candidate as three layers of decisions (docs/DESIGN.md, "A candidate is three layers of decisions").

- L0: the Relax module as lifted-params TVMScript (constants are trailing parameters c0, c1, ...;
  their values live in an .npz, or come from the task's own model for the root). Where the printed
  text does not parse back to the very same module, TVM's JSON serialisation of it is kept beside the
  text (`relax_json`) and is what gets built; the text stays the agents' view.
- L1: {structural hash of an unscheduled PrimFunc -> schedule trace (leka.sched) or TIR text}.
- L2: {structural hash of a scheduled PrimFunc -> target-source override}.

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
from pydantic import BaseModel, ConfigDict, Field, field_validator

from leka import tvm_adapter as A
from leka.backends import get_backend, l2_language, l2_languages
from leka.core.levels import LEVEL_SPECS, behaviour
from leka.core.task import Task
from leka.core.task import load_task_file as resolve
from leka.ir import sched


class L1Entry(BaseModel):
    model_config = ConfigDict(frozen=True)

    func: str  # PrimFunc name when the entry was made (names can change; the key is the hash)
    trace: list[dict[str, Any]] | None = None
    tir_text: str | None = None


class L2Entry(BaseModel):
    model_config = ConfigDict(frozen=True)

    kernel: str
    language: str  # an L2 language of some backend (leka.backends)
    text: str
    entry: str | None = None  # exported symbol, where the language needs one

    @field_validator("language")
    @classmethod
    def _known_language(cls, v: str) -> str:
        if v not in l2_languages():
            raise ValueError(f"unknown L2 language {v!r}; use one of {list(l2_languages())}")
        return v


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
    l1: dict[str, L1Entry] = Field(default_factory=dict)
    l2: dict[str, L2Entry] = Field(default_factory=dict)
    invalidated: list[str] = Field(default_factory=list)  # keys dropped by the last L0 edit
    # L2 compile-option edits (e.g. LLVM fast-math contraction): target attributes for the whole build
    target_opts: dict[str, Any] = Field(default_factory=dict)

    @property
    def digest(self) -> str:
        """Content hash of the decisions (not of where params live, only of their bytes)."""
        h = hashlib.sha256()
        h.update(self.backend.encode())
        h.update(self.relax_text.encode())
        if self.relax_json:  # only when set, so text-exact candidates keep their digests
            h.update(hashlib.sha256(self.relax_json.encode()).digest())
        h.update((params_digest(self.params_file) if self.params_file else "root").encode())
        h.update(json.dumps({k: v.model_dump() for k, v in sorted(self.l1.items())}, sort_keys=True).encode())
        h.update(json.dumps({k: v.model_dump() for k, v in sorted(self.l2.items())}, sort_keys=True).encode())
        if self.target_opts:  # only when set, so candidates without options keep their digests
            h.update(json.dumps(self.target_opts, sort_keys=True).encode())
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
    """L0 text -> bind -> lower -> L1 schedules (-> DLight on GPUs) -> L2 overrides -> compile.
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
    backend = target.kind.name
    mod, objects, post, applied_l2, libs = _apply_l2(mod, layers, c, backend, l2_dir, check_objects)
    if post:
        from leka.ir import l2 as L2

        with A.source_postproc(backend, post):
            ex = A.build(mod, target)
        missing = [k for k, n in post.hits.items() if n == 0]
        if missing:
            raise L2.L2Error(f"L2 kernel(s) {missing} not defined in the generated {backend} source")
    elif kernel_cache and get_backend(backend).kernel_cache and not objects and not for_rpc:
        try:
            ex, hit, new, libs = A.build_with_kernel_cache(mod, target, kernel_cache)
            return Built(executable=ex, lowered=mod, applied_l1=layers.applied_l1, applied_l2=applied_l2,
                         kernel_libs=libs, kernels={"cached": hit, "built": new})
        except Exception:  # noqa: BLE001 - whatever the cache cannot take, tvm.compile builds (and reports)
            ex = A.build(mod, target)
    else:
        ex = A.build(mod, target)
    return Built(executable=ex, lowered=mod, applied_l1=layers.applied_l1, applied_l2=applied_l2,
                 extra_modules=objects, l2_libs=libs)


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


# ============================================================================ layers: lowering, carry-forward
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


def l1_function(entry: L1Entry, func):
    """The scheduled PrimFunc an L1 entry makes of the unscheduled `func`."""
    if entry.tir_text:
        new = A.parse_tir(entry.tir_text)
        check_same_signature(func, new)
        return new
    return sched.apply_trace(func, entry.trace or [])


def check_same_signature(old, new) -> None:
    a, b = A.buffer_signature(old), A.buffer_signature(new)
    if [(s, d) for _, s, d in a] != [(s, d) for _, s, d in b]:
        raise ValueError("the replacement PrimFunc's buffer parameters differ from the original's: "
                         f"expected {[(list(s), d) for _, s, d in a]}, got {[(list(s), d) for _, s, d in b]}")


@dataclass
class Lowering:
    """What the levels' lowering stages (LevelSpec.stage) share: each one reads the candidate and
    replaces `mod`, the module so far."""

    candidate: Candidate
    target: Any
    unscheduled: Any  # after the zero pipeline
    mod: Any
    l1_keys: dict[str, str]  # PrimFunc name -> structural hash of its unscheduled form
    applied_l1: list[str] = field(default_factory=list)


def l1_stage(lw: Lowering) -> None:
    """L1's stage: its entries (marked scheduled on GPUs, which DLight skips), then DLight for the rest."""
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


def lower_layers(c: Candidate, target, root_params: dict[str, np.ndarray] | None = None) -> Layers:
    """The zero pipeline, then each level's stage in the table's order (L1: its entries, DLight for the
    rest on GPUs; L2 is applied at build, `build_candidate`)."""
    base = _zero_lowered(c, target, root_params)
    lw = Lowering(c, target, base, base, {name: A.structural_hash(f) for name, f in A.prim_funcs(base).items()})
    for spec in LEVEL_SPECS.values():
        if spec.stage:
            behaviour(spec, "stage")(lw)
    l2_keys = {name: A.structural_hash(f) for name, f in A.prim_funcs(lw.mod).items()}
    return Layers(unscheduled=base, scheduled=lw.mod, l1_keys=lw.l1_keys, l2_keys=l2_keys, applied_l1=lw.applied_l1)


def lowered_module(c: Candidate, target, root_params: dict[str, np.ndarray] | None = None) -> tuple[Any, dict[str, str]]:
    """The lowered, L1-scheduled module and {PrimFunc name -> L1 key} (the hash of the unscheduled
    PrimFunc). The L2 key of a PrimFunc is `A.structural_hash(mod[name])` of the returned module
    (also in `lower_layers(...).l2_keys`)."""
    layers = lower_layers(c, target, root_params)
    return layers.scheduled, layers.l1_keys


def _apply_l2(mod, layers: Layers, c: Candidate, backend: str, l2_dir, check_objects: bool = True):
    """CPU: PrimFunc body -> call_extern(ENTRY), the C++ compiled and loaded. GPU: a postproc that
    splices the kernel texts into the generated source."""
    from leka.ir import l2 as L2

    objects: list[str] = []
    libs: list[str] = []
    applied: list[str] = []
    splices: list[tuple[str, str, str]] = []  # (kernel name now, text, language)
    for name, key in layers.l2_keys.items():
        entry = c.l2.get(key)
        if entry is None:
            continue
        if entry.language in get_backend(c.backend).l2_linked:
            if backend != c.backend:
                raise L2.L2Error(f"L2 entry for {name} is {entry.language} but the target is {backend}")
            comp = compile_l2_source(entry.language, entry.text, l2_dir, check=check_objects)
            # the entry, sealed under a name of its own: the judge's baseline, built on another thread
            # of the process this library is loaded into, can never resolve a symbol to it
            sealed = L2.check_symbol(comp, entry.entry or name)
            mod = A.replace_prim_func(mod, name, A.extern_prim_func(mod[name], sealed.symbol))
            objects.append(str(sealed.obj))
            libs.append(str(sealed.so))
        else:
            if entry.language != backend:
                raise L2.L2Error(f"L2 entry for {name} is {entry.language} but the target is {backend}")
            old_kernel = entry.entry or f"{entry.kernel}_kernel"
            new_kernel = old_kernel.replace(entry.kernel, name, 1) if entry.kernel != name else old_kernel
            text = entry.text if new_kernel == old_kernel else re.sub(
                r"\b" + re.escape(old_kernel) + r"\b", new_kernel, entry.text)
            splices.append((new_kernel, text, entry.language))
        applied.append(key)
    post = None
    if splices:
        if get_backend(backend).source_hook is None:
            raise L2.L2Error(f"backend {backend} has no hook on its generated source (Backend.source_hook): "
                             f"the L2 kernel texts of {[k for k, _, _ in splices]} cannot be spliced in")
        hits = {k: 0 for k, _, _ in splices}

        def post(src: str) -> str:
            # OpenCL may hand over one source per kernel: splice where the definition is
            for kname, text, lang in splices:
                src, n = L2.splice_kernel(src, kname, text, lang)
                hits[kname] += n
            return src

        post.hits = hits  # type: ignore[attr-defined]
    return mod, objects, post, applied, libs


def compile_l2_source(language: str, text: str, l2_dir=None, check: bool = True):
    """Compile one L2 C / C++ / LLVM IR source; with `check`, its object is checked before anything
    loads it (raises `L2.IllegalObject`)."""
    from leka.ir import l2 as L2

    compiler = l2_language(language).compiler
    if compiler == "llvm-ir":
        return L2.compile_llvm_ir(text, l2_dir, A.llvm_ir_to_object, check=check)
    if compiler not in ("c", "c++"):
        raise L2.L2Error(f"L2 language {language!r} is not compiled to an object (it is spliced into the "
                         "generated source)")
    return L2.compile_cpp(text, l2_dir, language="c" if compiler == "c" else "cpp", check=check)


def export(built: Built, path: str | Path, cross_compiler: str = "") -> str:
    """A deployable .so (L2 objects linked in) that loads in a fresh process with
    `tvm.runtime.load_module` + `relax.VirtualMachine`."""
    opts = list(built.extra_modules)
    if opts:
        opts.append("-fopenmp")  # the hand-written kernels may use OpenMP
    A.export_library(built.executable, str(path), options=opts, cross_compiler=cross_compiler)
    return str(path)
