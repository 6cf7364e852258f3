"""MetaSchedule tuning of a lowered module (the tuned baseline)."""

from __future__ import annotations

import tvm
from tvm import relax


def _fast_builder(max_workers: int = 2, timeout_sec: float = 120.0):
    """LocalBuilder whose workers skip `import tvm.s_tir.tensor_intrin` (~23 s per fresh worker
    here, so the default 30 s builder timeout kills every candidate). The build function is a
    closure so cloudpickle ships it by value to workers that cannot import this module's caller."""
    from tvm.s_tir import meta_schedule as ms

    def fast_build(mod, target, _params):
        from tvm.driver import build as tvm_build
        from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

        if target.kind.name == "cuda":  # a fresh worker: register the CUDA C compile callback
            from tvm.support import nvcc  # noqa: F401

        mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
        return tvm_build(mod, target=target)

    return ms.builder.LocalBuilder(f_build=fast_build, max_workers=max_workers, timeout_sec=timeout_sec)


def tune_relax(lowered: tvm.IRModule, target: tvm.target.Target, work_dir: str, trials: int, seed: int = 0) -> int:
    """Tune every fused PrimFunc of a lowered module with MetaSchedule; the JSON database lands in
    work_dir. Returns the number of tuning tasks."""
    from tvm.s_tir import meta_schedule as ms

    tasks = ms.relax_integration.extract_tasks(lowered, target)
    if not tasks:
        return 0
    ms.relax_integration.tune_relax(
        mod=lowered, params={}, target=target, work_dir=work_dir, max_trials_global=trials,
        max_trials_per_task=max(4, trials // len(tasks)), num_trials_per_iter=min(8, max(2, trials)),
        builder=_fast_builder(), seed=seed)
    return len(tasks)


def apply_tuning_db(lowered: tvm.IRModule, target: tvm.target.Target, work_dir: str) -> tvm.IRModule:
    from tvm.s_tir import meta_schedule as ms

    db = ms.database.JSONDatabase(work_dir=work_dir)
    with target, db:
        return relax.transform.MetaScheduleApplyDatabase(enable_warning=False)(lowered)
