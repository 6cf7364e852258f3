"""The evaluator must accept a correct candidate and reject each adversarial one with the right
error_kind, and keep going afterwards (docs/DESIGN.md, "Evaluator protocol")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark.judge import Evaluator
from benchmark.task import load_task_file
from leka import ir
from leka.core.config import EvaluatorConfig

DATA = Path(__file__).parent / "data"
ADV = DATA / "adversarial"


@pytest.fixture(scope="module")
def task():
    return load_task_file(DATA / "tiny_task.py")


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    cfg = EvaluatorConfig(timeout_s=60, memory_cap_gb=2.0, timing_budget_s=1.0)
    return Evaluator(cfg, cache_dir=str(tmp_path_factory.mktemp("cache")))


def _cand(task, name):
    return ir.candidate_from_file(task, ADV / f"{name}.py")


def test_default_lowering_is_correct_and_timed(task, ev):
    res = ev.evaluate(task)
    assert res.compiled and res.correct, res.error
    assert res.error_kind in (None, "timing_invalid")
    assert res.speedup is not None and 0.3 < res.speedup < 3.0  # A vs A on a noisy machine
    assert res.n_pairs >= 3 and res.t_candidate_s > 0 and res.t_baseline_s > 0
    assert res.peak_memory_bytes and res.peak_memory_bytes >= 2 * 4 * 64 * 4  # input + output at least
    assert res.max_abs_err is not None and res.max_abs_err < 1e-5


def test_baseline_is_built_once_then_loaded(task, tmp_path):
    """The untuned baseline's kernels are compiled by the first evaluation only; later ones load their
    libraries (same outputs), and `baseline_cache=false` leaves none behind."""
    import numpy as np

    from benchmark import baselines
    from benchmark.roots import load_root
    from leka import tvm_adapter as A

    root, target = load_root(task), A.make_target("llvm")
    inputs = [t.numpy() for t in task.make_inputs(0)]
    first = baselines.prebuild("untuned", task=task, root=root, backend="llvm", target=target, cache_dir=str(tmp_path))
    libs = sorted((tmp_path / "kernels").glob("*.so"))
    assert libs
    stamp = [p.stat().st_mtime_ns for p in libs]
    again = baselines.prebuild("untuned", task=task, root=root, backend="llvm", target=target, cache_dir=str(tmp_path))
    assert [p.stat().st_mtime_ns for p in libs] == stamp  # loaded, not rebuilt
    np.testing.assert_array_equal(first(*inputs)[0], again(*inputs)[0])
    off = tmp_path / "off"
    baselines.prebuild("untuned", task=task, root=root, backend="llvm", target=target, cache_dir=str(off),
                       so_cache=False)
    assert not (off / "kernels").exists()
    res = Evaluator(EvaluatorConfig(timeout_s=60, timing_budget_s=0.5), cache_dir=str(tmp_path)).evaluate(task)
    assert res.correct and res.speedup is not None, res.error
    assert res.extra["kernels"] == {"cached": len(libs), "built": 0}  # the candidate (the root) found them
    assert sorted((tmp_path / "kernels").glob("*.so")) == libs


def test_a_scalar_output_is_compared_as_a_scalar(tmp_path):
    """A loss (0-d output) against its reference: the stored reference keeps rank 0."""
    f = tmp_path / "mse.py"
    f.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                 "    def forward(self, p, t):\n        return torch.mean((p - t) ** 2)\n\n\n"
                 "def get_inputs():\n    return [torch.randn(8, 64), torch.randn(8, 64)]\n\n\n"
                 "def get_init_inputs():\n    return []\n")
    res = Evaluator(EvaluatorConfig(timeout_s=120, timing_budget_s=0.3), cache_dir=str(tmp_path)).evaluate(
        load_task_file(f))
    assert res.correct, res.error


def test_hand_written_correct_candidate_file_passes(task, ev, tmp_path):
    # the root text, rewritten by hand as an agent would: relu(x)*w + x == max(x,0)*w + x
    text = ir.import_root(task).text.replace("R.nn.relu(x)", 'R.maximum(x, R.const(0.0, "float32"))')
    p = tmp_path / "cand.py"
    p.write_text(text)
    res = ev.evaluate(task, ir.candidate_from_file(task, p), time_it=False)
    assert res.correct, res.error


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("zeros", "mismatch"),
        ("return_input", "mismatch"),
        ("nan", "nan"),
        ("wrong_shape", "shape"),
        ("mutate_input", "input_mutated"),
        ("read_reference", "runtime"),
        ("unparsable", "compile"),
        ("segfault", "crash"),
    ],
)
def test_adversarial_candidates_are_rejected(task, ev, name, kind):
    res = ev.evaluate(task, _cand(task, name), time_it=False)
    assert not res.correct
    assert res.error_kind == kind, (res.error_kind, res.error)
    assert res.error


def test_hang_becomes_timeout(task, tmp_path):
    ev = Evaluator(EvaluatorConfig(timeout_s=12), cache_dir=str(tmp_path))
    res = ev.evaluate(task, _cand(task, "hang"), time_it=False)
    assert res.error_kind == "timeout" and not res.correct
    assert res.error.endswith("during the check step") and res.extra["killed_in"] == "check", res.error
    assert 12 <= res.wall_s < 40
    # and the evaluator goes on
    assert ev.evaluate(task, time_it=False).correct


def test_memory_cap_becomes_oom(task, tmp_path):
    ev = Evaluator(EvaluatorConfig(timeout_s=120, memory_cap_gb=1.5), cache_dir=str(tmp_path))
    res = ev.evaluate(task, _cand(task, "over_memory"), time_it=False)
    assert res.error_kind == "oom", (res.error_kind, res.error)
    assert "during the check step" in res.error, res.error


@pytest.mark.parametrize("source", ["tiny_task.py", "resnet_block_task.py"])
def test_cli_eval_external_file_writes_json(tmp_path, source):
    src = (DATA / source).read_text().replace('"id": "tiny_scale_residual"', '"id": "outside"')
    f = tmp_path / "outside.py"
    f.write_text(src)
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "leka.cli", "bench", "eval", str(f), "--json", str(out),
                        "--set", "evaluator.timing_budget_s=0.5", "--set", f"baseline.cache_dir={tmp_path}"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    for key in ("task", "backend", "compiled", "correct", "speedup", "baseline", "error_kind", "error",
                "peak_memory_bytes"):
        assert key in data
    assert data["task"] == "outside" and data["correct"] and data["baseline"] == "untuned"
    assert data["speedup"] is not None and data["speedup"] > 0 and data["peak_memory_bytes"] > 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["bench", "eval", "tiny_scale_residul"], "unknown task"),
        (["bench", "eval", "example_mbv2_blok"], "did you mean"),
        (["bench", "eval", str(DATA / "not_a_task.py")], "not a KernelBench-format task"),
        (["bench", "eval", str(DATA / "tiny_task.py"), "--backend", "vulkan"], "unknown backend"),
        (["bench", "eval", str(DATA / "tiny_task.py"), "--baseline", "best"], "unknown baseline"),
        (["bench", "list", "--domain", "space"], "unknown domain"),
    ],
)
def test_cli_bad_input_is_one_line(args, needle):
    r = subprocess.run([sys.executable, "-m", "leka.cli", *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_cli_names_an_op_tvm_cannot_import(tmp_path):
    f = tmp_path / "svd_task.py"
    f.write_text("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                 "        return torch.linalg.svd(x)[1]\n"
                 "def get_inputs():\n    return [torch.randn(8, 8)]\ndef get_init_inputs():\n    return []\n")
    r = subprocess.run([sys.executable, "-m", "leka.cli", "bench", "eval", str(f), "--set",
                        f"baseline.cache_dir={tmp_path}"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "svd" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_cli_inputs_over_the_cap(tmp_path):
    r = subprocess.run([sys.executable, "-m", "leka.cli", "bench", "eval", str(DATA / "tiny_task.py"),
                        "--set", "evaluator.input_cap_gb=0.0000001", "--set", f"baseline.cache_dir={tmp_path}"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "over the cap" in r.stderr, r.stderr


CACHING_CPP = r"""
#include <cstdint>
#include <cstring>
static float cache[4 * 64];
static bool have = false;
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  if (CACHE && have) {  // replay the first result, whatever the inputs are now
    std::memcpy(out, cache, sizeof cache);
    return 0;
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 64; ++j) {
      float v = x[i * 64 + j];
      out[i * 64 + j] = (v > 0.f ? v : 0.f) * w[j] + v;
    }
  std::memcpy(cache, out, sizeof cache);
  have = true;
  return 0;
}
"""


@pytest.mark.parametrize(("cache", "correct"), [(False, True), (True, False)])
def test_candidate_that_caches_its_output_is_rejected(task, tmp_path, cache, correct):
    """An L2 C++ kernel that computes once and replays that result afterwards: the poison run on
    other inputs and the three seeds must expose it; the same kernel without the cache passes.
    The static check (which rejects its `static` cache outright, tests/test_evaluator_integrity.py)
    is off here, so this tests the runtime defence alone."""
    from leka import tvm_adapter as A
    from leka.ir import L2Entry

    ev = Evaluator(EvaluatorConfig(timeout_s=60, memory_cap_gb=2.0, static_check=False),
                   cache_dir=str(tmp_path))
    root = ir.import_root(task)
    cand = ir.root_candidate(task, root=root)
    layers = ir.lower_layers(cand, A.make_target("llvm"), root.params)
    ((kernel, key),) = list(layers.l2_keys.items())
    entry = f"leka_cached_{int(cache)}"
    src = CACHING_CPP.replace("ENTRY", entry).replace("CACHE", "true" if cache else "false")
    cand = cand.model_copy(update={"l2": {key: L2Entry(kernel=kernel, language="cpp", text=src, entry=entry)}})
    res = ev.evaluate(task, cand, time_it=False)
    assert res.compiled and res.correct is correct, (res.error_kind, res.error)
    if not correct:
        assert res.error_kind == "mismatch"
