"""Evaluator memory (issue 18): outputs are checked seed by seed against references computed in a
process of their own and read memory-mapped, under a cap derived from the task's footprint (or the
configured one); a task that cannot fit is refused in one line before anything is built."""

from __future__ import annotations

import numpy as np
import pytest

from benchmark.judge import Evaluator, compare, memory
from benchmark.judge import refs as refstore
from benchmark.task import load_task_file
from leka.core.config import EvaluatorConfig

MATMUL = '''
import torch


class Model(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn({m}, 16), torch.randn(16, {n})]


def get_init_inputs():
    return []
'''


def _task(tmp_path, m, n):
    p = tmp_path / f"tall_matmul_{m}x{n}.py"
    p.write_text(MATMUL.format(m=m, n=n))
    return load_task_file(p)


def test_large_outputs_are_checked_seed_by_seed_within_a_small_cap(tmp_path):
    # a 128 MiB output, 4 seeds: kept all at once with their references and float64 copies this
    # needed about 2 GiB; seed by seed it fits a 1.25 GiB cap
    task = _task(tmp_path, 4096, 8192)
    cap_gb = 1.25
    ev = Evaluator(EvaluatorConfig(timeout_s=300, memory_cap_gb=cap_gb), cache_dir=str(tmp_path / "cache"))
    res = ev.evaluate(task, time_it=False)
    assert res.correct, (res.error_kind, res.error)
    assert len(res.seeds) == 3 and res.extra.get("fresh_seed")  # 3 fixed seeds and the fresh one
    out, inputs = 4096 * 8192 * 4, (4096 * 16 + 16 * 8192) * 4
    assert res.peak_rss_bytes and res.peak_rss_bytes < cap_gb * 2**30
    # the worker's peak within the process's base + 3 x (inputs + one output set)
    assert res.peak_rss_bytes <= memory.BASE_BYTES + memory.NEED_FACTOR * (inputs + out), res.peak_rss_bytes / 2**30
    assert res.peak_memory_bytes >= out


def test_outputs_near_the_cap_are_timed_lean_within_it(tmp_path):
    # timed, the same task held 6 output sets in TVM's pool (the C++ loop's ring of two per arm): over
    # 1.25 GiB. Lean: naive allocator, no ring, 3 input sets, within the check's bound
    task = _task(tmp_path, 4096, 8192)
    cap_gb = 1.25
    fp = memory.Footprint(params=0, inputs=(4096 * 16 + 16 * 8192) * 4, outputs=4096 * 8192 * 4)
    assert memory.timing_plan(fp, cap_gb).lean and not memory.timing_plan(fp, 4.0).lean
    assert not memory.timing_plan(fp, cap_gb, "standard").lean and memory.timing_plan(fp, 4.0, "lean").lean
    # the in-process path's lean plan (GPU / OpenCL / boards; the sandboxed worker holds a request's outputs)
    ev = Evaluator(EvaluatorConfig(timeout_s=300, memory_cap_gb=cap_gb, timing_budget_s=1.0, sandbox=False),
                   cache_dir=str(tmp_path / "cache"))
    res = ev.evaluate(task)
    assert res.correct and res.speedup and res.speedup > 0, (res.error_kind, res.error)
    assert "lean timing" in res.extra["timing_memory"] and res.extra["timing_input_sets"] == 3
    assert res.peak_rss_bytes <= memory.BASE_BYTES + memory.NEED_FACTOR * (fp.inputs + fp.outputs), \
        res.peak_rss_bytes / 2**30


def test_task_that_cannot_fit_is_refused_in_one_line(tmp_path):
    task = _task(tmp_path, 16384, 16384)  # a 1 GiB output: about 3.8 GiB needed
    ev = Evaluator(EvaluatorConfig(timeout_s=300, memory_cap_gb=2.0), cache_dir=str(tmp_path / "cache"))
    res = ev.evaluate(task, time_it=False)
    assert res.error_kind == "bad_input" and not res.compiled
    assert "\n" not in res.error and "memory cap of 2.0 GiB" in res.error and "outputs 1.00 GiB" in res.error, res.error


def test_derived_cap_grows_with_the_footprint_up_to_the_machine_share():
    small = memory.Footprint(params=1 << 20, inputs=1 << 20, outputs=1 << 20)
    cap, _ = memory.cap_bytes(None, small)
    machine = int(memory.machine_bytes() * memory.MACHINE_SHARE)
    assert cap == min(machine, int(memory.MIN_CAP_GB * 2**30))
    big = memory.Footprint(params=0, inputs=0, outputs=machine)
    assert memory.cap_bytes(None, big)[0] == machine
    assert "over the memory cap" in memory.refusal(big, None)
    assert memory.refusal(small, None) is None
    assert memory.cap_bytes(3.0, big) == (3 * 2**30, "evaluator.memory_cap_gb")  # the override is kept
    # a margin over the need (CAP_FACTOR > NEED_FACTOR): a task that needs 3.2x of its footprint
    # is not killed at 3x
    mid = memory.Footprint(params=0, inputs=0, outputs=3 * 2**30)
    if mid.allowance <= machine:
        assert memory.cap_bytes(None, mid)[0] == mid.allowance > mid.need


def test_chunked_compare_against_a_memory_mapped_reference(tmp_path):
    n = refstore.CHUNK_BYTES // 8 * 2 + 1000  # three chunks
    rng = np.random.default_rng(0)
    ref = rng.standard_normal(n).astype("float32")
    np.save(tmp_path / "r.npy", ref)
    r = np.load(tmp_path / "r.npy", mmap_mode="r")
    assert compare([ref.copy()], [r], 1e-4, 1e-4)[0] is None
    bad = ref.copy()
    bad[-3] += 1.0  # in the last chunk
    kind, msg, max_abs, _ = compare([bad], [r], 1e-4, 1e-4)
    assert kind == "mismatch" and "1 of" in msg and max_abs == pytest.approx(1.0, rel=1e-3)
    bad[-3] = np.nan
    assert compare([bad], [r], 1e-4, 1e-4)[0] == "nan"
    assert compare([bad.reshape(-1, 1)], [r], 1e-4, 1e-4)[0] == "shape"
