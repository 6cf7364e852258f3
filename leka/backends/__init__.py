"""The backend table: a backend is one file, `leka/backends/<name>.py`, binding a `Backend` record to the
name `BACKEND`. The table is discovered, not listed: every module of this package with a `BACKEND` is a
backend (`_discover`); `register(Backend(...))` adds one at run time (a test adds a fourth, Metal, from
its own tree). The rest of the code asks the record, never the name: the CLI's `--backend` choices,
config validation, the L2 languages and their parsers, the script guard, the rule agents and a grid's
resources all come from here.

Nothing here imports TVM: the records describe, `leka.tvm_adapter` realises (the target from
`target_spec`, the device from `device`), so config validation and `leka --help` stay light. Hooks that
need code of an upper layer name it by a "module:attribute" string (`rule_agents`), resolved there.

Fields (keep the interface small; add a field here, with a default, when a backend needs a new hook):

- `name`: the `--backend` value, also the TVM target kind.
- `target_spec(system_cpu, num_cores, **opts) -> dict`: the JSON form of the TVM target, host codegen
  included (a GPU target's `host`).
- `device` / `remote_device`: the TVM device constructor (`tvm.<device>`) and the RPC session's
  (`session.<remote_device>`).
- `runs_on`: where candidates can run ("local", "gpu", "rpc"); `unavailable() -> str | None` says why
  they cannot run on this machine (None: they can). The CUDA and OpenCL modules own their checks.
- `domain`: the suite's task domain this backend's subset draws from (`benchmark.task.select`).
- `l2`: its L2 languages (`L2Language`: artefact extension, how a source is built, parsed and
  guarded); the first is the one an agent writes by default.
- `gpu`: lowering adds DLight default schedules and an L1 trace must bind threads (GPU rule variants,
  no CPU layout passes).
- `cuda`: the CUDA runtime: evaluations hold the GPU alone, time with device timers after an L2 flush,
  report device memory, a CUDA fault ends the evaluation process (`benchmark/judge/gpu_timing.py`), and an
  L2 source is compiled with nvcc when an edit is applied.
- `source_hook`: the TVM global through which the generated device source passes at compile time
  (L2 kernel texts are spliced in there); None: the backend has none (Metal), so a spliced L2 source
  cannot be built.
- `compile_options`: the codegen attributes a `compile_options` edit may set (empty: no such edits).
- `kernel_cache`: kernels can be compiled one by one into a shared-library cache
  (`tvm_adapter/kernel_cache.py`) for candidates and the baseline.
- `resources` / `holds_device`: a grid job's default Ray resources (`leka.exp.scheduler`); with
  `holds_device` it also holds one `device:<key>` resource (a board).
- `rule_agents`: level -> "module:Class" of this backend's own rule agent where it differs from the
  default one (`agents.rules`).
- `peaks`: datasheet roofs by arch (name, fp32 GFLOP/s, GB/s) for devices not measured here;
  `default_arch` picks one. Empty: the roofs are measured (`profilers.calibrate`).
- `roof_device`: the torch device whose matmul and copy measure this backend's roof on its host
  (`leka bench roof --backend`; cached, then preferred to `peaks`); "": only the datasheet.
- `baselines`: the baseline kinds an evaluation on this backend can be timed against -> the device the
  kind's engine runs on there ("" for TVM's own kinds; "cpu" / "cuda" for PyTorch; "CPU" / "OPENCL" for
  MNN's backends...). The judge asks this table (`benchmark.baselines.refusal`), never the name.
- `rank`: where the CLI lists it (then by name).
- `runtime_env`: the environment variables a candidate's run needs from the parent process (the
  OpenCL plugin and ICD paths, the visible GPUs), handed to `./measure` by the Claude Code arm.
- `contract_l1` / `contract_l2`: the backend's part of the Claude Code arm's contract (what its
  candidate files `l1/*` and `l2/*` mean, how an L2 file is built; `leka.arms.workspace`).
- `prompt_l2`: the backend's part of the LLM agents' L2 contract (how an override in each of its
  languages is wired in, its compile options; `prompts/_l2_contract.j2`); `option_sets`: the
  `compile_options` edits a small model may choose from (`leka.llm.small`, `prompts/_small_schema.j2`).
  An L2 language's `prompt` says in a phrase what a source in it is (`prompts/l2_source.j2`). The
  prompts name a backend's languages and contract from these fields only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GuardProfile:
    """What the L2 script guard (`leka.ir.l2_guard`) allows at file scope in a C-family language."""

    constant: str = ""  # regex: a declaration with it is a constant table (allowed)
    device_state: str = ""  # regex: a declaration with it is a device variable, state if mutable
    device_qualifiers: str = ""  # regex of the qualifiers to drop before asking "mutable?" (default device_state)
    device_heap: bool = False  # device malloc / new: memory that outlives the call


@dataclass(frozen=True)
class L2Language:
    """One L2 source language: how its sources are stored, built, parsed and guarded."""

    name: str
    extension: str  # of the artefact a run folder stores
    # linked languages: "c++", "c" or "llvm-ir", compiled to an object called through `call_extern`;
    # "": a whole kernel function spliced into the generated source (through the backend's `source_hook`)
    compiler: str = ""
    syntax: str = "c"  # "c": C-family text (the guard's C lexer, // comments); "llvm-ir"
    file_suffixes: tuple[str, ...] = ()  # in a candidate folder (leka/ir/files.py); the first is written
    kernel_qualifier: str = ""  # spliced: regex of what precedes a kernel's name where it is defined
    kernel_words: str = ""  # spliced: how a message names such a function
    guard: GuardProfile = field(default_factory=GuardProfile)
    # a candidate folder's file of PrimFunc NAME defines this symbol unless it declares another one
    default_entry: str = "leka_{name}"
    prompt: str = ""  # what a source in this language is, in a phrase for the L2 agent's prompt

    def entry_for(self, primfunc: str) -> str:
        return self.default_entry.format(name=primfunc)

    @property
    def linked(self) -> bool:
        return bool(self.compiler)


@dataclass(frozen=True)
class Backend:
    name: str
    target_spec: Callable[..., dict[str, Any]]
    device: str
    remote_device: str
    runs_on: tuple[str, ...]
    unavailable: Callable[[], str | None]
    domain: str
    l2: tuple[L2Language, ...] = ()
    gpu: bool = False
    cuda: bool = False
    source_hook: str | None = None
    compile_options: frozenset[str] = frozenset()
    kernel_cache: bool = False
    resources: dict[str, float] = field(default_factory=lambda: {"CPU": 1.0})
    holds_device: bool = False
    rule_agents: dict[str, str] = field(default_factory=dict)
    peaks: dict[str, tuple[str, float, float]] = field(default_factory=dict)
    default_arch: str = ""
    roof_device: str = ""
    baselines: dict[str, str] = field(default_factory=lambda: {"untuned": "", "tuned": ""})
    rank: int = 100
    # the Claude Code arm's contract (leka/arms/claude_code_contract.md): what an L1 file means on this
    # backend, with an example trace (`contract_l1`), and the L2 files' bullet (`contract_l2`); Markdown,
    # `$max_threads` filled from the target
    contract_l1: str = ""
    contract_l2: str = ""
    # environment variables a process that runs candidates needs from its parent (a tool started with
    # a clean environment: the Claude Code arm's ./measure)
    runtime_env: tuple[str, ...] = ()
    # the LLM agents' L2 contract (prompts/_l2_contract.j2): Markdown bullets, one per language or kind
    prompt_l2: str = ""
    # compile_options edits a small model's schema offers (each a subset of `compile_options`)
    option_sets: tuple[dict[str, Any], ...] = ()

    @property
    def l2_languages(self) -> dict[str, str]:
        """L2 language -> file extension of the stored artefact."""
        return {lang.name: lang.extension for lang in self.l2}

    @property
    def l2_linked(self) -> tuple[str, ...]:
        """The L2 languages compiled to an object and called through `call_extern`; the others replace
        a kernel function inside the generated source."""
        return tuple(lang.name for lang in self.l2 if lang.linked)


class BackendError(ValueError):
    """Bad backend input: the CLI prints it as one line and exits 2, like a `UserError` (this package is
    the bottom layer, below `leka.core`, so it cannot derive from `UserError`)."""


class UnknownBackend(BackendError):
    """A backend name no module registered."""


class BackendUnavailable(BackendError):
    """A known backend whose candidates cannot run on this machine."""


_REGISTRY: dict[str, Backend] = {}
_DISCOVERED = False


def _discover() -> None:
    """Every module of this package that binds `BACKEND` is a backend: adding one is adding a file."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    import importlib
    import pkgutil

    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        b = getattr(importlib.import_module(f"{__name__}.{info.name}"), "BACKEND", None)
        if isinstance(b, Backend):
            found.append(b)
    for b in found:
        _REGISTRY.setdefault(b.name, b)  # a run-time registration made first wins
    _sort()
    _DISCOVERED = True


def _sort() -> None:
    items = sorted(_REGISTRY.values(), key=lambda b: (b.rank, b.name))
    _REGISTRY.clear()
    _REGISTRY.update((b.name, b) for b in items)


def register(backend: Backend) -> Backend:
    """Add (or replace) a backend at run time; `unregister` takes it out again."""
    _discover()
    _REGISTRY[backend.name] = backend
    _sort()
    return backend


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def backend_names() -> tuple[str, ...]:
    _discover()
    return tuple(_REGISTRY)


def get_backend(name: str) -> Backend:
    _discover()
    if name not in _REGISTRY:
        raise UnknownBackend(f"unknown backend {name!r}; use one of {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


def all_backends() -> list[Backend]:
    _discover()
    return list(_REGISTRY.values())


def l2_languages() -> tuple[str, ...]:
    """Every L2 language some backend accepts, in table order."""
    return tuple(dict.fromkeys(lang.name for b in all_backends() for lang in b.l2))


def l2_language(name: str) -> L2Language:
    """The record of an L2 language (the first backend's that has it). A name no backend has gets a
    plain C profile: the guard still checks it as C, nothing builds or splices it."""
    for b in all_backends():
        for lang in b.l2:
            if lang.name == name:
                return lang
    return L2Language(name=name, extension="txt")


def l2_extension(language: str) -> str:
    return l2_language(language).extension


def require_runnable(name: str, device_url: str = "local") -> Backend:
    """The backend, or a `BackendUnavailable` saying why its candidates cannot run on this machine. A
    remote device (`rpc://HOST:PORT/KEY`) brings its own runtime: only the name is checked then."""
    b = get_backend(name)
    if device_url not in ("", "local"):
        if "rpc" not in b.runs_on:
            raise BackendUnavailable(f"backend {name!r} does not run through TVM RPC")
        return b
    why = b.unavailable()
    if why:
        raise BackendUnavailable(f"backend {name!r} cannot run on this machine: {why}")
    return b
