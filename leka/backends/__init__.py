"""One table per backend: everything the rest of the code asks about a backend, in one module each.

A backend is a `Backend` record in `leka/backends/<name>.py` (bound to the name `BACKEND`) and is
listed in `_BUILTIN` below; `register(Backend(...))` adds one at run time (a test does, with a fake
fourth backend). Nothing here imports TVM: the records describe, `leka.tvm_adapter` realises (the
target from `target_spec`, the device from `device`), so config validation and `leka --help` stay light.

Fields (keep the interface small; add a field here, with a default, when a backend needs a new hook):

- `name`: the `--backend` value, also the TVM target kind.
- `target_spec(system_cpu, num_cores, **opts) -> dict`: the JSON form of the TVM target.
- `device` / `remote_device`: the TVM device constructor (`tvm.<device>`) and the RPC session's
  (`session.<remote_device>`).
- `runs_on`: where candidates can run ("local", "gpu", "rpc"); `unavailable() -> str | None` says why
  they cannot run on this machine (None: they can). The CUDA and OpenCL modules own their checks.
- `gpu`: lowering adds DLight default schedules and an L1 trace must bind threads.
- `cuda`: the CUDA runtime: evaluations hold the GPU alone, time with device timers after an L2 flush,
  report device memory, and a CUDA fault ends the evaluation process (`benchmark/gpu_timing.py`).
- `l2_languages`: L2 source language -> file extension of the stored artefact.
- `l2_linked`: the L2 languages compiled to an object and called through `call_extern`; the others
  replace a kernel function inside the generated source.
- `peaks`: datasheet roofs by arch (name, fp32 GFLOP/s, GB/s) for devices not measured here;
  `default_arch` picks one. Empty: the roofs are measured (`profilers.calibrate`).
- `domain`: the suite's task domain this backend's subset draws from (`benchmark.task.select`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Backend:
    name: str
    target_spec: Callable[..., dict[str, Any]]
    device: str
    remote_device: str
    runs_on: tuple[str, ...]
    unavailable: Callable[[], str | None]
    l2_languages: dict[str, str]
    domain: str
    gpu: bool = False
    cuda: bool = False
    l2_linked: tuple[str, ...] = ()
    peaks: dict[str, tuple[str, float, float]] = field(default_factory=dict)
    default_arch: str = ""


class BackendError(ValueError):
    """Bad backend input: the CLI prints it as one line and exits 2, like a `UserError` (this package is
    the bottom layer, below `leka.core`, so it cannot derive from `UserError`)."""


class UnknownBackend(BackendError):
    """A backend name no module registered."""


class BackendUnavailable(BackendError):
    """A known backend whose candidates cannot run on this machine."""


_REGISTRY: dict[str, Backend] = {}
_BUILTIN = ("llvm", "cuda", "opencl")  # modules of this package, in the order the CLI lists them


def register(backend: Backend) -> Backend:
    _load_builtin()
    _REGISTRY[backend.name] = backend
    return backend


def _load_builtin() -> None:
    if all(name in _REGISTRY for name in _BUILTIN):
        return
    import importlib

    for name in _BUILTIN:
        _REGISTRY.setdefault(name, importlib.import_module(f"leka.backends.{name}").BACKEND)


def backend_names() -> tuple[str, ...]:
    _load_builtin()
    return tuple(_REGISTRY)


def get_backend(name: str) -> Backend:
    _load_builtin()
    if name not in _REGISTRY:
        raise UnknownBackend(f"unknown backend {name!r}; use one of {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


def all_backends() -> list[Backend]:
    _load_builtin()
    return list(_REGISTRY.values())


def l2_languages() -> tuple[str, ...]:
    """Every L2 language some backend accepts, in registry order."""
    return tuple(dict.fromkeys(lang for b in all_backends() for lang in b.l2_languages))


def l2_extension(language: str) -> str:
    for b in all_backends():
        if language in b.l2_languages:
            return b.l2_languages[language]
    return "txt"


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
