"""The timers of the timing protocol (benchmark/judge/timing.py): the C++ loop (leka.tvm_adapter.call_loop)
calls a function on rotating input sets with no Python between calls, carries the set across samples,
hands the last output of each sample to the check, and keeps outputs alive so that the buffer a VM
call writes last held another input set's result."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmark.judge import baseline_arm, timing
from benchmark.task import load_task_file
from leka import ir
from leka import tvm_adapter as A
from leka.core.config import EvaluatorConfig
from leka.core.types import EvalResult

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def loop_cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("call_loop"))


@pytest.fixture(scope="module")
def vm():
    """The tiny task's untuned VM, three input sets on the device and their references."""
    task = load_task_file(DATA / "tiny_task.py")
    root = ir.import_root(task)
    runner = A.VMRunner(ir.build_candidate(ir.root_candidate(task, "llvm", root), A.make_target("llvm"),
                                           root.params).executable, A.device_for("llvm"))
    inputs = [[t.numpy() for t in task.make_inputs(s)] for s in range(3)]
    refs = [task.make_model()(*task.make_inputs(s)).detach().numpy() for s in range(3)]
    return runner, inputs, refs


def _recording_kernel(seen: list[int]):
    def kernel(tag: int) -> int:  # "computes" tag * 10 and records which input set it saw
        seen.append(tag)
        return tag * 10
    return kernel


def test_cpp_loop_rotates_input_sets_like_the_python_loop(loop_cache):
    sets = [[0], [1], [2]]
    seen_c: list[int] = []
    seen_p: list[int] = []
    checked_c: list[tuple[int, int]] = []
    checked_p: list[tuple[int, int]] = []
    tc = timing.looped_timer(A.call_loop.rotating_loop(_recording_kernel(seen_c), sets, loop_cache), 3,
                             check=lambda k, out: checked_c.append((k, out)))
    tp = timing.rotating_timer(_recording_kernel(seen_p), sets, check=lambda k, out: checked_p.append((k, out)))
    for n in (4, 2, 1, 5):
        assert tc.sample(n) >= 0 and tp.sample(n) >= 0
    # every call gets the next set, and a sample starts where the previous one ended
    assert seen_c == [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]
    assert seen_p == seen_c
    # the check sees the last call of each sample: its set and its output
    assert checked_c == [(0, 0), (2, 20), (0, 0), (2, 20)]
    assert checked_p == checked_c
    assert (tc.kind, tp.kind) == ("cpp_loop", "python_loop")


def test_a_replayed_result_raises_stale_output(loop_cache):
    """A kernel that computes once and then returns its first result: the sample's last output is
    checked against the reference of its own input set."""
    first: list[int] = []

    def replay(tag: int) -> int:
        if not first:
            first.append(tag * 10)
        return first[0]

    def check(k: int, out: int) -> None:
        if out != k * 10:
            raise timing.StaleOutput(f"set {k}: got {out}, expected {k * 10}")

    t = timing.looped_timer(A.call_loop.rotating_loop(replay, [[0], [1]], loop_cache), 2, check=check)
    assert t.sample(1) >= 0  # one call, on set 0: computed
    with pytest.raises(timing.StaleOutput, match="set 1: got 0, expected 10"):
        t.sample(1)
    # paired_timing lets it through to the evaluator (error_kind stale_output)
    honest = timing.looped_timer(A.call_loop.rotating_loop(lambda tag: tag * 10, [[0], [1]], loop_cache), 2, check=check)
    replaying = timing.looped_timer(A.call_loop.rotating_loop(lambda tag: 0, [[0], [1]], loop_cache), 2, check=check)
    cfg = EvaluatorConfig(timing_budget_s=0.05, sample_s=0.001).model_dump()
    assert timing.paired_timing(honest, honest, cfg)["speedup"] > 0
    with pytest.raises(timing.StaleOutput):
        timing.paired_timing(replaying, honest, cfg)


def test_the_checked_set_changes_from_sample_to_sample(loop_cache):
    """With 2 sets and an even `number` every sample would end on the same set, and only that set's
    outputs would ever be checked: a sample's call count is made coprime with the set count."""
    seen: list[int] = []
    checked: list[int] = []
    t = timing.looped_timer(A.call_loop.rotating_loop(_recording_kernel(seen), [[0], [1]], loop_cache), 2,
                            check=lambda k, out: checked.append(k))
    for _ in range(4):
        t.sample(4)
    assert len(seen) == 20 and seen == [0, 1] * 10  # 5 calls a sample, strictly alternating
    assert checked == [0, 1, 0, 1]


def test_an_error_in_a_timed_call_is_raised(loop_cache):
    def kernel(tag: int) -> int:
        if tag == 1:
            raise ValueError("kernel failed on set 1")
        return 0

    run = A.call_loop.rotating_loop(kernel, [[0], [1]], loop_cache)
    assert run(1, 0) == 0
    with pytest.raises(ValueError, match="kernel failed on set 1"):
        run(2, 0)
    with pytest.raises(Exception, match="k=5"):
        run(1, 5)


def test_vm_loop_outputs_and_output_buffers(vm, loop_cache):
    """A VM's outputs through the loop match each set's reference, and the output buffer a call writes
    never last held its own set's output (TVM's loop, holding nothing, alternates two buffers in step
    with two sets: a kernel that looks into its output buffer would find its answer there)."""
    runner, inputs, refs = vm
    dev = [runner.to_device(x) for x in inputs]

    def owners(hold: int | None, n_sets: int) -> list[tuple[int, int | None]]:
        """(set of each call, set whose output its buffer held before) over single-call samples."""
        run = runner.rotating_loop(dev[:n_sets], loop_cache) if hold is None else \
            A.call_loop.rotating_loop(runner.vm["main"], dev[:n_sets], loop_cache, hold=hold)
        held: dict[int, int] = {}
        got = []
        k = 0
        for _ in range(12):
            (o,) = A.flatten_outputs(run(1, k))
            np.testing.assert_array_equal(o.numpy(), refs[k])
            got.append((k, held.get(o.data_ptr())))
            held[o.data_ptr()] = k
            del o
            k = (k + 1) % n_sets
        return got

    for n_sets in (2, 3):
        steady = owners(None, n_sets)[4:]
        assert all(prev is not None and prev != k for k, prev in steady), (n_sets, steady)
    # the reason for holding outputs: without it, two sets meet their own old output every call
    assert all(prev == k for k, prev in owners(0, 2)[4:])
    # several calls per sample: the last output is the last set's
    run = runner.rotating_loop(dev[:2], loop_cache)
    for number, k in ((3, 0), (4, 1), (5, 1)):
        (o,) = A.flatten_outputs(run(number, k))
        np.testing.assert_array_equal(o.numpy(), refs[(k + number - 1) % 2])


def test_vm_timer_falls_back_to_the_python_loop_without_a_compiler(vm, tmp_path, monkeypatch):
    runner, inputs, refs = vm
    monkeypatch.setenv("LEKA_CXX", str(tmp_path / "no-such-compiler"))
    with pytest.raises(A.CallLoopUnavailable, match="no C\\+\\+ compiler"):
        A.call_loop.rotating_loop(runner.vm["main"], [runner.to_device(inputs[0])], str(tmp_path))
    seen: list[int] = []
    t = baseline_arm.vm_rotating_timer(runner, inputs[:2], check=lambda k, out: seen.append(k), cache_dir=str(tmp_path))
    assert t.kind == "python_loop" and t.sample(3) > 0 and seen == [0]
    monkeypatch.delenv("LEKA_CXX")
    t = baseline_arm.vm_rotating_timer(runner, inputs[:2], check=lambda k, out: seen.append(k), cache_dir=str(tmp_path))
    assert t.kind == "cpp_loop" and t.sample(3) > 0 and seen == [0, 0]


def test_hold_for_keeps_the_buffer_period_off_the_set_period():
    for n_sets in range(2, 9):
        period = max(2, A.call_loop.hold_for(n_sets) + 1)
        assert period % n_sets != 0, n_sets
    assert A.call_loop.hold_for(2) == 2 and A.call_loop.hold_for(3) == 1


# the plan and the stopping rule (synthetic timers, no kernel): tests/test_stats.py


def test_repetitions_of_a_pair_alternate_between_the_arms():
    # every timed run follows a run of the other arm (A B A B A B, then B A B A B A): runs of one arm back
    # to back left the first cold and the rest warm, which read as a few percent between two copies of
    # one program in the sandboxed A-vs-A
    order: list[str] = []

    def arm(name: str, seconds: float) -> timing.Timer:
        def sample(n: int) -> float:
            order.append(name)
            return seconds
        return timing.Timer(sample, name)

    cfg = EvaluatorConfig(warmup=1, sample_s=0.03, sample_repeats=3, min_pairs=2, max_pairs=2,
                          timing_budget_s=10.0, ci_width=0.0).model_dump()
    tm = timing.paired_timing(arm("c", 1e-3), arm("b", 1e-3), cfg, probe_load=False)
    assert tm["pairs"] == 2 and tm["repeats"] == [3, 3]
    assert "".join(order[4:]) == "cbcbcb" + "bcbcbc", order  # after the warm-up's c, b (first calls), c, b


def test_the_noise_floor_times_the_baseline_against_itself():
    # (a first version planned the A-vs-A again from one-call samples: a sandboxed worker's first
    # sample calibrates once, so both sides then planned from single calls, got unequal call counts and
    # read 0.3x-3x on microsecond kernels in the cpu_quick grid)
    # issue 27: the noise floor is an A-vs-A of the baseline by the same protocol, after the comparison;
    # a candidate twice as fast reads ~2x, while the baseline against itself holds 1.00 in its interval
    import random

    rng = random.Random(7)
    calls = {"c": 0, "b": 0}

    def arm(name: str, seconds: float) -> timing.Timer:
        def sample(n: int) -> float:
            calls[name] += 1
            return seconds * rng.uniform(0.97, 1.03)
        return timing.Timer(sample, name)

    cfg = EvaluatorConfig(min_pairs=3, max_pairs=6, timing_budget_s=10.0, noise_floor=True,
                          noise_floor_pairs=5).model_dump()
    tm = timing.paired_timing(arm("c", 0.5e-3), arm("b", 1e-3), cfg, probe_load=False)
    nf = tm["noise_floor"]
    assert 1.8 < tm["speedup"] < 2.2
    assert nf["pairs"] == 5 and nf["lo"] <= 1.0 <= nf["hi"] and 0.97 < nf["speedup"] < 1.03, nf
    assert nf["number"] == tm["number"][1]  # the comparison's plan for the baseline, on both sides
    b_before = calls["b"]
    assert calls["c"] < b_before  # the A-vs-A ran the baseline only
    res = EvalResult(task="t")
    tm["speedup_lo"], tm["speedup_hi"] = tm["speedup_lo"] or 1.9, tm["speedup_hi"] or 2.1
    timing.record(res, tm)
    assert res.extra["noise_floor"] == nf
    # off by default: no A-vs-A, no key
    cfg["noise_floor"] = False
    assert timing.paired_timing(arm("c", 0.5e-3), arm("b", 1e-3), cfg, probe_load=False)["noise_floor"] is None


def test_sandbox_loop_keeps_the_last_calls_outputs(vm, loop_cache):
    """The sandboxed worker's window loop (run here in-process, over a pool like the worker's): with a
    ring of `hold`, the records are those of the last `hold` calls, in call order, and each holds its
    own call's result; hold 0 keeps every call's. The progress it leaves names the request's nonce
    and all its calls."""
    import ctypes
    import mmap

    runner, inputs, refs = vm
    nbytes = inputs[0][0].nbytes
    buf = mmap.mmap(-1, 3 * nbytes)  # page-aligned, as the worker's pool; set s at byte offset s * nbytes
    buf[:] = b"".join(x[0].tobytes() for x in inputs)
    results = np.zeros(12 * 16, dtype=np.int64)
    offsets = np.array([(c % 3) * nbytes for c in range(7)], dtype=np.int64)
    progress = np.zeros(2, dtype=np.int64)
    for hold, kept in ((3, [4, 5, 6]), (0, list(range(7))), (10, list(range(7)))):
        run, _ = A.sandbox_runner(runner, buf, [0], [(inputs[0][0].shape, "float32")], loop_cache, hold=hold)
        got = run(7, offsets.ctypes.data, results.ctypes.data, results.size, progress.ctypes.data, 1234 + hold)
        assert got == 12 * len(kept), (hold, got)
        assert progress.tolist() == [1234 + hold, 7], progress
        for r, c in zip(results[:got].reshape(-1, 12), kept, strict=True):
            out = np.ctypeslib.as_array((ctypes.c_float * (int(r[1]) // 4)).from_address(int(r[0])))
            np.testing.assert_allclose(out.reshape(refs[0].shape), refs[c % 3], rtol=1e-5, atol=1e-5)


def test_drawn_call_counts_leave_no_call_safe_to_skip():
    """With a ring of the last `hold` outputs the call count is memoryless: at whatever call a kernel
    is, the chance that the request ends within `hold` calls (so the call may be checked) is the same;
    without a ring (every output kept) the count stays within 3/4 of the planned one."""
    import random

    from benchmark.judge.sandbox.timing import draw_calls

    rng = random.Random(7)
    n, most, hold = 40, 257, 3
    draws = [draw_calls(rng, n, most, hold) for _ in range(40000)]
    assert 0.9 * n < sum(draws) / len(draws) < 1.1 * n and max(draws) <= most and min(draws) >= 1
    ends_soon = []
    for i in (1, 10, 40, 80):
        reached = [d for d in draws if d >= i]
        ends_soon.append(sum(d < i + hold for d in reached) / len(reached))
    expect = 1 - (1 - 1 / n) ** hold
    assert all(abs(p - expect) < 0.03 for p in ends_soon), (ends_soon, expect)
    fixed = [draw_calls(rng, n, most, 0) for _ in range(2000)]
    assert min(fixed) == 30 and max(fixed) == 40
    assert draw_calls(rng, 1, most, hold) == 1 and draw_calls(rng, 50, 2, hold) == 1


def test_a_first_call_that_builds_does_not_plan_the_samples():
    """Issue 27: the baseline's first call builds its program (NVIDIA's OpenCL builds at first launch), the
    candidate's does not (its checks ran it). Planned from those calls, the baseline's samples were of one
    call each, and a per-sample cost that the candidate's long samples spread thin read as an A/A speedup.
    The plan comes from a later round: both arms of one program make the same number of calls, and the
    first calls are recorded."""
    def arm(first_s: float, call_s: float, per_sample_s: float, warm: bool = False) -> timing.Timer:
        state = {"first": True, "calls": 0}

        def sample(n: int) -> float:
            state["calls"] += 1
            one_time = first_s if state.pop("first", False) else 0.0
            return (one_time + per_sample_s + n * call_s) / n
        t = timing.Timer(sample, warm=warm)
        t.state = state
        return t

    def a_a(warmup: int) -> dict:
        cfg = EvaluatorConfig(warmup=warmup, sample_s=0.03, max_pairs=5, timing_budget_s=100.0,
                              ci_width=0.0).model_dump()
        # one 10 us program, 20 us of sync and launch cost per sample; the baseline's first call builds (50 ms)
        return timing.paired_timing(arm(0.0, 1e-5, 2e-5), arm(0.05, 1e-5, 2e-5), cfg, probe_load=False)

    old = a_a(0)
    assert old["number"][0] > 100 * old["number"][1] and old["speedup"] > 2.0, old  # the bias, reproduced
    new = a_a(1)
    assert new["number"][0] == new["number"][1] and new["speedup"] == pytest.approx(1.0), new
    assert new["first_call_s"][1] > 0.04 and new["plan_call_s"][1] < 1e-4, new
    res = EvalResult(task="t", correct=True)
    timing.record(res, new)
    assert res.extra["first_call_s"][1] > 0.04 and res.extra["number"][0] == res.extra["number"][1]
    # warm timers (the sandboxed workers': their programs ran before) plan from their first calls
    cfg = EvaluatorConfig(warmup=1, sample_s=0.03, max_pairs=5, timing_budget_s=100.0, ci_width=0.0).model_dump()
    a, b = arm(0.0, 1e-5, 2e-5, warm=True), arm(0.0, 1e-5, 2e-5, warm=True)
    plan = timing._plan(a, b, cfg)
    assert a.state["calls"] == b.state["calls"] == 1 and plan["plan_call_s"] == plan["first_call_s"], plan
    warm, cold = arm(0.0, 1e-5, 2e-5, warm=True), arm(0.0, 1e-5, 2e-5)
    timing._plan(warm, cold, cfg)
    assert warm.state["calls"] == cold.state["calls"] == 2  # one arm not warm: the round runs
