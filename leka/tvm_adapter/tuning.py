"""MetaSchedule tuning of a lowered module (the tuned baseline).

Tuning starts from the unscheduled PrimFuncs (`lower(..., gpu_schedule=False)`): MetaSchedule skips a
PrimFunc DLight has already scheduled (`tirx.is_scheduled`), so on a GPU target a DLight-lowered module
gives no tuning task at all. The tuned module is then the database's schedules plus DLight for the
PrimFuncs the database has no record of (`tuned_module`), as TVM's own `compile_relax` does.

MetaSchedule builds and runs every trial in worker processes (popen pools). A target whose device API
is a plugin (OpenCL: `opencl_plugin`) gets an initializer that loads it in each worker, else
`tvm.opencl(0)` does not exist there and every trial fails to run. A board behind the RPC tracker
(`rpc=(host, port, key)`) runs the trials with MetaSchedule's RPCRunner; its rpc_server loads the
plugin itself (`--load-library`), and the trial libraries are linked here with `cross_compiler`.
"""

from __future__ import annotations

from collections.abc import Callable

import tvm
from tvm import relax

from leka.tvm_adapter.lowering import gpu_default_schedule
from leka.tvm_adapter.targets import is_gpu


def worker_initializer(target: tvm.target.Target) -> Callable[[], None] | None:
    """What a MetaSchedule worker process runs first for this target: load the OpenCL runtime plugin
    (ctypes, RTLD_GLOBAL) when the target is OpenCL; None when the wheel's runtime has the device.
    A closure over the plugin's path, so cloudpickle ships it by value to workers that may not be
    able to import leka."""
    if target.kind.name != "opencl":
        return None
    from leka.tvm_adapter.opencl_plugin import plugin_path

    path = str(plugin_path())

    def load_opencl_plugin() -> None:
        import ctypes

        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)

    return load_opencl_plugin


def light_tensor_intrin(target: tvm.target.Target) -> None:
    """Register only the x86 tensor intrinsics for an x86 llvm target, before MetaSchedule's
    `TuneContext` imports the whole `tvm.s_tir.tensor_intrin` package: that parses every backend's
    intrinsics (measured on a loaded 2-core machine: 140 s, of it 104 s CUDA, 1.2 s x86; 84 s of
    `leka bench baseline --trials 2` on a quiet one, where TVMScript's `inspect.stack()` walks the
    CLI's deep stack for each of them), and the x86 llvm space generator asks for the x86 ones only
    (`MultiLevelTilingWithIntrin`: the VNNI / AVX-512 dot products). Any other target (a board's aarch64
    triple, CUDA, OpenCL) gets the whole package, also in a process that tuned an x86 target first: the
    light stand-in then gives way to the real package (its x86 module, already run, is kept)."""
    import importlib
    import importlib.util
    import platform
    import sys
    import types

    name = "tvm.s_tir.tensor_intrin"
    triple = str(target.attrs.get("mtriple", "") or "") or platform.machine()
    if target.kind.name != "llvm" or not triple.startswith(("x86_64", "AMD64")):
        if getattr(sys.modules.get(name), "_leka_light", False):
            del sys.modules[name]
            importlib.import_module(name)
        return
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    pkg = types.ModuleType(name)
    pkg.__path__ = list(spec.submodule_search_locations or [])
    pkg.__spec__ = spec
    pkg.__package__ = name
    pkg._leka_light = True  # type: ignore[attr-defined]
    sys.modules[name] = pkg
    importlib.import_module(f"{name}.x86")


def _fast_builder(max_workers: int = 2, timeout_sec: float = 120.0, initializer=None, cross_compiler: str = ""):
    """LocalBuilder whose workers skip `import tvm.s_tir.tensor_intrin` (~23 s per fresh worker
    here, so the default 30 s builder timeout kills every candidate). The build function is a
    closure so cloudpickle ships it by value to workers that cannot import this module's caller.
    `cross_compiler` (a board's g++): the trial libraries are linked to .so here for the board's host
    CPU instead of MetaSchedule's default .tar, which the board would have to link itself."""
    from tvm.s_tir import meta_schedule as ms

    def fast_build(mod, target, _params):
        from tvm.driver import build as tvm_build
        from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

        if target.kind.name == "cuda":  # a fresh worker: register the CUDA C compile callback
            from tvm.support import nvcc  # noqa: F401

        mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
        return tvm_build(mod, target=target)

    f_export = None
    if cross_compiler:
        cc_name = cross_compiler

        def f_export(mod) -> str:
            import os
            import tempfile

            from tvm.support import cc

            path = os.path.join(tempfile.mkdtemp(), "tvm_tmp_mod.so")
            mod.export_library(path, fcompile=cc.cross_compiler(cc_name))
            return path

    return ms.builder.LocalBuilder(f_build=fast_build, f_export=f_export, max_workers=max_workers,
                                   timeout_sec=timeout_sec, initializer=initializer)


def _runner(target: tvm.target.Target, rpc: tuple[str, int, str] | None, timeout_sec: float):
    """MetaSchedule's runner: a local worker with the target's device (its plugin loaded), or
    RPCRunner to a board registered under KEY at the tracker HOST:PORT (one session per trial, which
    is also the trial's time limit)."""
    from tvm.s_tir import meta_schedule as ms

    if rpc is not None:
        host, port, key = rpc
        cfg = ms.runner.RPCConfig(tracker_host=host, tracker_port=int(port), tracker_key=key,
                                  session_priority=1, session_timeout_sec=int(timeout_sec))
        return ms.runner.RPCRunner(rpc_config=cfg, max_workers=1)
    return ms.runner.LocalRunner(timeout_sec=timeout_sec, initializer=worker_initializer(target))


def tuning_tasks(lowered: tvm.IRModule, target: tvm.target.Target) -> int:
    """How many PrimFuncs of the module MetaSchedule would tune (those marked scheduled it skips)."""
    from tvm.s_tir import meta_schedule as ms

    return len([t for t in ms.relax_integration.extract_tasks(lowered, target)
                if not t.mod.attrs.get("tirx.is_scheduled", False)])


def tune_relax(lowered: tvm.IRModule, target: tvm.target.Target, work_dir: str, trials: int, seed: int = 0,
               rpc: tuple[str, int, str] | None = None, cross_compiler: str = "",
               run_timeout_s: float = 120.0, on_start: Callable[[int], None] | None = None) -> int:
    """Tune every fused PrimFunc of a lowered, unscheduled module (`lower(..., gpu_schedule=False)`)
    with MetaSchedule; the JSON database lands in work_dir. Returns the number of tuning tasks (those
    MetaSchedule would skip as already scheduled are not counted). `run_timeout_s` per trial is past
    MetaSchedule's 30 s: PoCL compiles a trial's OpenCL C on its first run, in the runner. `on_start(n)`
    is called with that count before the first trial (a caller that times the tuning starts its clock)."""
    from tvm.s_tir import meta_schedule as ms

    n = tuning_tasks(lowered, target)
    if on_start is not None:
        on_start(n)
    if not n:
        return 0
    light_tensor_intrin(target)
    ms.relax_integration.tune_relax(
        mod=lowered, params={}, target=target, work_dir=work_dir, max_trials_global=trials,
        max_trials_per_task=max(4, trials // n), num_trials_per_iter=min(8, max(2, trials)),
        builder=_fast_builder(initializer=worker_initializer(target), cross_compiler=cross_compiler),
        runner=_runner(target, rpc, run_timeout_s), seed=seed)
    return n


def apply_tuning_db(lowered: tvm.IRModule, target: tvm.target.Target, work_dir: str) -> tvm.IRModule:
    """The database's best schedule for each PrimFunc it has a record of (marked scheduled); the
    others are left as they are."""
    from tvm.s_tir import meta_schedule as ms

    db = ms.database.JSONDatabase(work_dir=work_dir)
    with target, db:
        return relax.transform.MetaScheduleApplyDatabase(enable_warning=False)(lowered)


def tuned_module(lowered: tvm.IRModule, target: tvm.target.Target, work_dir: str) -> tvm.IRModule:
    """The tuned baseline's module from an unscheduled lowered one: the database's schedules, then on
    GPU targets DLight's default schedules for the PrimFuncs without a record (DLight skips the
    scheduled ones), so every kernel binds threads."""
    mod = apply_tuning_db(lowered, target, work_dir)
    return gpu_default_schedule(mod, target) if is_gpu(target) else mod
