"""MetaSchedule as a tool of the L1 agent (issue 19; agents/l1_tune.py, leka/tvm_adapter/ms_tool.py).

Fast: a recorded MetaSchedule trace of l1_conv2d_strided_3x3's conv becomes DSL steps that replay to
the very PrimFunc MetaSchedule's own replay gives (same structural hash); the tool stays off by
default and the `ms_tool` arm switches it on. Slow: a real `leka run` with the tool on and 2 trials:
the tuned edit is an L1 node that replays, evaluates correct, and whose tuning time is in the budget.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.common import lowered_funcs
from benchmark.roots import load_root
from benchmark.task import resolve
from leka import ir
from leka import tvm_adapter as A
from leka.core.config import load_config
from leka.ir import sched

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def strided_conv():
    task = resolve("l1_conv2d_strided_3x3")
    root = load_root(task)
    cand = ir.root_candidate(task, "llvm", root)
    funcs = lowered_funcs(cand, A.make_target("llvm"), root.params)
    return task, root, cand, funcs["conv2d"]


def _fresh(func):
    """A deep copy: an `s_tir.Schedule` made from a module can rewrite the statements it shares with
    the PrimFunc it came from (seen here: the fixture's PrimFunc came back scheduled)."""
    import tvm

    return tvm.ir.load_json(tvm.ir.save_json(func))


def _native_replay(func, text: str):
    """MetaSchedule's own replay of its trace's Python form (tvm, in the test only)."""
    import tvm
    from tvm import s_tir

    ns: dict = {"s_tir": s_tir}
    exec(text, ns)  # noqa: S102 - the recorded trace is test data
    sch = s_tir.Schedule(A.ms_tool.workload_mod(_fresh(func)))
    ns["apply_trace"](sch)
    assert isinstance(sch.mod, tvm.IRModule)
    return sch.mod["main"]


def test_ms_trace_becomes_dsl_steps_that_replay_exactly(strided_conv):
    _, _, _, func = strided_conv
    text = (DATA / "ms_trace_conv2d_strided_3x3.txt").read_text()
    steps = A.trace_steps(text)
    prims = [s["prim"] for s in steps]
    # samplers with recorded decisions became values, the postproc marker is gone
    assert not {"sample_perfect_tile", "sample_categorical", "enter_postproc"} & set(prims)
    assert "sample_compute_location" in prims and "unannotate" in prims
    splits = [s for s in steps if s["prim"] == "split"]
    assert splits[1]["kwargs"]["factors"] == [1, 2, 1, 16]
    ann = [s for s in steps if s["prim"] == "annotate" and s["kwargs"]["ann_key"] == "meta_schedule.unroll_explicit"]
    assert ann[0]["kwargs"]["ann_val"] == 64  # candidates[decision 2]
    ours = sched.apply_trace(func, json.loads(json.dumps(steps)))  # the steps are plain JSON
    assert A.structural_hash(ours) == A.structural_hash(_native_replay(func, text))
    # and they differ from the unscheduled function (the check is not vacuous)
    assert A.structural_hash(ours) != A.structural_hash(func)


def test_warm_start_commits_this_workloads_records_only(tmp_path, strided_conv):
    """A database holding a record of this PrimFunc (the recorded trace) warm-starts a fresh one; a
    missing folder and another workload contribute nothing; the committed record is the best
    schedule the fresh database answers with."""
    from tvm import s_tir
    from tvm.s_tir import meta_schedule as ms

    _, _, _, func = strided_conv
    text = (DATA / "ms_trace_conv2d_strided_3x3.txt").read_text()
    target = A.make_target("llvm")
    mod = A.ms_tool.workload_mod(_fresh(func))
    ns: dict = {"s_tir": s_tir}
    exec(text, ns)  # noqa: S102 - the recorded trace is test data
    sch = s_tir.Schedule(A.ms_tool.workload_mod(_fresh(func)))
    ns["apply_trace"](sch)
    (tmp_path / "src").mkdir()
    src = ms.database.JSONDatabase(work_dir=str(tmp_path / "src"))
    src.commit_tuning_record(ms.database.TuningRecord(sch.trace, src.commit_workload(mod), [1e-3], target,
                                                      ms.arg_info.ArgInfo.from_prim_func(func)))
    dirs = [str(tmp_path / "missing"), str(tmp_path / "src")]
    fresh = ms.database.MemoryDatabase()
    assert A.ms_tool.warm_start(fresh, mod, target, dirs) == 1 and len(fresh) == 1
    best = fresh.query_schedule(mod, target, workload_name="main")
    assert A.structural_hash(best.mod["main"]) == A.structural_hash(_native_replay(func, text))
    other = A.ms_tool.workload_mod(sched.apply_trace(func, A.trace_steps(text)))
    assert A.ms_tool.warm_start(ms.database.MemoryDatabase(), other, target, dirs) == 0


def test_a_schedule_the_dsl_cannot_replay_becomes_tir_text(tmp_path, strided_conv):
    """The tool's fallback: steps that do not replay (here a primitive the DSL does not allow) give
    the scheduled PrimFunc as a `tir_text` edit, which applies, builds and computes the conv."""
    from agents.l1_tune import TunerL1Agent
    from leka.ir.edits import apply_edit

    task, root, cand, func = strided_conv
    text = (DATA / "ms_trace_conv2d_strided_3x3.txt").read_text()
    scheduled = _native_replay(func, text)
    res = A.TuneResult(ok=True, steps=[{"prim": "tensorize", "args": []}], scheduled=scheduled)
    edit = TunerL1Agent._as_edit("conv2d", func, res, "MetaSchedule, test")
    assert edit.kind == "tir_text" and edit.rationale.endswith("(as TIR)")
    out = apply_edit(cand, edit, workdir=tmp_path, root_params=root.params)
    assert out.ok, out.error
    # and with steps that replay, the same schedule is a trace edit
    good = A.TuneResult(ok=True, steps=A.trace_steps(text), scheduled=scheduled)
    assert TunerL1Agent._as_edit("conv2d", func, good, "MetaSchedule, test").kind == "trace"


def test_warm_start_sources_are_this_targets_baselines_and_earlier_runs(tmp_path):
    """Where the tool looks for records: the tuned-baseline cache of this target (any task, any trial
    count) and earlier runs' databases of this kernel, never another target's nor its own."""
    from agents.l1_tune import target_key, warm_dirs

    target = A.make_target("llvm")
    tk = f"llvm-{target_key(target)}"
    made = {}
    for name, rel in {"base": f"ms/t1-abc/{tk}/trials64", "base16": f"ms/t2-def/{tk}/trials16",
                      "other_target": "ms/t1-abc/cuda-0000/trials64", "run_a": f"ms-l1/{tk}/k1/run_a",
                      "own": f"ms-l1/{tk}/k1/run_b", "other_kernel": f"ms-l1/{tk}/k2/run_a"}.items():
        made[name] = tmp_path / rel
        made[name].mkdir(parents=True)
    got = set(warm_dirs(tmp_path, "llvm", target, "k1", own=made["own"]))
    assert got == {made["base"], made["base16"], made["run_a"]}


def test_trace_steps_rejects_what_the_dsl_cannot_say():
    with pytest.raises(A.ms_tool.TraceConversionError):
        A.trace_steps("def apply_trace(sch):\n  b0 = other.get_sblock(name='x')\n")
    with pytest.raises(A.ms_tool.TraceConversionError):
        A.trace_steps("x = 1\n")


def test_tool_is_off_by_default_and_the_arm_switches_it_on():
    from leka.exp.presets import PRESETS

    assert load_config().tuner.enabled is False
    recipe, sets, _ = PRESETS["ms_tool"]
    assert recipe == "leka" and load_config(overrides=sets).tuner.enabled is True


@pytest.mark.slow
def test_run_with_the_tool_makes_a_replayable_correct_l1_entry(tmp_path, strided_conv):
    """~5 min loaded: root + 3 rule traces, then the tool tunes the scheduled hot conv (2 trials)."""
    import tvm

    from candidate_tree import Tree
    from leka.run import run

    task, root, _, func = strided_conv
    cache = tmp_path / "cache"
    sets = ["tuner.enabled=true", "tuner.trials=2", "tuner.min_left_s=0", "run.routing=fixed:L1",
            "run.layers=[L1]", "run.max_evals=5", "run.budget_s=1500", f"run.out={tmp_path / 'runs'}",
            f"baseline.cache_dir={cache}", "evaluator.max_pairs=3"]
    summary = run(task.id, overrides=sets, quiet=True, live=False)
    tuner = summary["tuner"]
    assert tuner["ok"] == 1 and tuner["trials"] >= 1, tuner
    # the tool's wall clock was charged: the run's budget holds it
    assert 0 < tuner["seconds"] <= summary["budget_used_s"]
    run_dir = Path(summary["run_dir"])
    tree = Tree(run_dir, create=False, mirror=False)
    try:
        tuned = [n for n in tree.nodes() if n.edit is not None and "MetaSchedule" in n.edit.rationale]
        assert len(tuned) == 1
        node = tuned[0]
        assert node.status in ("correct", "measured", "pending", "pruned"), (node.status, node.result)
        assert node.result.correct
        cand = ir.Candidate.model_validate_json(tree.artifact(node.id, "candidate.json"))
    finally:
        tree.close()
    key = A.structural_hash(func)
    entry = cand.l1[key]
    # replay: the entry applied to the unscheduled PrimFunc again is what MetaSchedule built
    kern = tuner["kernels"][0]
    db = next(cache.glob(f"ms-l1/*/{key}/*"))
    want = tvm.ir.load_json((db / "scheduled.json").read_text())
    assert kern["key"] == key and entry.trace is not None
    assert A.structural_hash(sched.apply_trace(func, entry.trace)) == A.structural_hash(want)


def test_light_tensor_intrin_gives_way_to_the_whole_package(tmp_path):
    """Tuning an x86 llvm target registers the x86 intrinsics alone; a later CUDA or board target in the
    same process (a grid's baselines, say) gets the whole package, CUDA's intrinsics among them, and the
    x86 ones are not registered twice (TVM refuses that). In a child: the stand-in is process-wide."""
    import subprocess
    import sys

    code = """
import sys, tvm
from tvm.s_tir import TensorIntrin
from leka.tvm_adapter.tuning import light_tensor_intrin
light_tensor_intrin(tvm.target.Target({"kind": "llvm", "mtriple": "x86_64-linux-gnu"}))
assert TensorIntrin.get("dot_16x4_avx512", allow_missing=True) is not None
assert TensorIntrin.get("mma_ldmatrix_f16_a", allow_missing=True) is None
light_tensor_intrin(tvm.target.Target({"kind": "cuda", "arch": "sm_90"}))
assert TensorIntrin.get("mma_ldmatrix_f16_a", allow_missing=True) is not None
assert TensorIntrin.get("dot_16x4_avx512", allow_missing=True) is not None
import tvm.s_tir.tensor_intrin as ti
assert not getattr(ti, "_leka_light", False) and ti.x86 is sys.modules["tvm.s_tir.tensor_intrin.x86"]
print("ok")
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       cwd=Path(__file__).resolve().parents[1])
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-2000:]


@pytest.mark.slow
def test_a_run_out_of_rule_ideas_gives_its_budget_left_to_metaschedule(tmp_path):
    """~2 min: tuner.when_idle (on by default, the tool itself off): once the rule L1 agent has nothing
    more and no widened round finds anything new, the answer's kernels are tuned instead of the run
    stopping with its budget left; the tuned edit is an evaluated L1 node of the answer's lineage.
    (A broadcast multiply over 240 x 28 x 28 values: tiny_task's one kernel is at its roof once scheduled, and a
    kernel at its roof is not tuned.)"""
    from candidate_tree import Tree
    from leka.run import run

    sets = ["tuner.trials=2", "tuner.min_left_s=0", "run.routing=fixed:L1", "run.layers=[L1]",
            "run.widen_rounds=1", "run.budget_s=900", f"run.out={tmp_path / 'runs'}",
            f"baseline.cache_dir={tmp_path / 'cache'}", "evaluator.max_pairs=3"]
    summary = run("l1_mul_broadcast_channel", overrides=sets, quiet=True, live=False)
    assert "a MetaSchedule round (tuner.when_idle)" in summary["stop_reason"], summary["stop_reason"]
    assert summary["tuner"]["calls"] >= 1 and summary["tuner"]["seconds"] <= summary["budget_used_s"]
    tree = Tree(Path(summary["run_dir"]), create=False, mirror=False)
    try:
        tuned = [n for n in tree.nodes() if n.edit is not None and "MetaSchedule" in n.edit.rationale]
        assert tuned and all(n.level == "L1" and n.result is not None for n in tuned)
        assert all("tuner.when_idle" in n.route_reason for n in tuned)
    finally:
        tree.close()
