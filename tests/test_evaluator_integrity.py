"""Issue 13: a timed run must measure computation. Each attack class written as an agent could write
it, as an L2 C++ kernel for the tiny task (y = relu(x) * w + x, 4x64): it is rejected with its own
error_kind or gains nothing, while an honest kernel of the same shape passes."""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
import pytest
from tiny_l2 import COMPUTE, HEAD, HONEST, l2_candidate

from benchmark.judge import Evaluator
from benchmark.task import load_task_file
from leka import ir
from leka.core.config import EvaluatorConfig
from leka.core.types import Edit
from leka.ir import l2_guard
from leka.ir.edits import apply_edit

DATA = Path(__file__).parent / "data"
# the protocol before issue 13 (one fixed timing input set, no checks of timed outputs, no fresh
# seed, no process-state guard): used to show that each attack would have worked
OLD = {"timing_input_sets": 1, "check_timed_outputs": False, "fresh_seed": False, "process_check": False,
       "static_check": False}

# input-keyed memo: computes for every new input, returns its last output when sampled inputs match
MEMO = HEAD + COMPUTE + r"""
static float last_out[256];
static float last_key[4];
static bool have = false;
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  float key[4] = {x[0], x[77], x[160], x[255]};
  if (have && std::memcmp(key, last_key, sizeof key) == 0) {
    std::memcpy(out, last_out, sizeof last_out);
    return 0;
  }
  compute(x, w, out);
  std::memcpy(last_out, out, sizeof last_out);
  std::memcpy(last_key, key, sizeof key);
  have = true;
  return 0;
}
"""
# stateless: returns at once when its output buffer already holds this input's result (4 sampled
# values; for a product Freivalds' test would check it all for less than the product costs). In a
# plain timing loop a Relax VM's output buffers alternate in step with two input sets, so the buffer
# holds its answer from two calls before (leka/tvm_adapter/call_loop.py)
PEEK = HEAD + "#include <cmath>\n" + COMPUTE + r"""
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  bool ready = true;
  const int at[4] = {0, 77, 160, 255};
  for (int i : at) {
    float v = x[i], e = (v > 0.f ? v : 0.f) * w[i % 64] + v;
    if (!(std::fabs(out[i] - e) <= 1e-5f * (1.f + std::fabs(e)))) ready = false;
  }
  if (!ready) compute(x, w, out);
  return 0;
}
"""
# computes for the checked runs (a poison run and 4 seeds) and the warm-up, then stops writing its output
STOPS = HEAD + COMPUTE + r"""
static long calls = 0;
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  if (++calls <= 12) compute(x, w, out);
  return 0;
}
"""
BACKGROUND = HEAD + "#include <thread>\n#include <chrono>\n" + COMPUTE + r"""
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  std::thread([=] {  // returns at once; the output appears later
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    compute(x, w, out);
  }).detach();
  return 0;
}
"""
AFFINITY = HEAD + "#include <sched.h>\n" + COMPUTE + r"""
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  cpu_set_t one; CPU_ZERO(&one); CPU_SET(0, &one);
  sched_setaffinity(0, sizeof one, &one);  // the baseline's turn runs on one core
  compute(x, w, out);
  return 0;
}
"""
# the same attack on the FP environment, its name hidden from the lexical check by token pasting
HIDDEN_FP = HEAD + COMPUTE + r"""
#define CAT(a, b) a##b
extern "C" int CAT(fese, tround)(int);
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  CAT(fese, tround)(ROUND_MODE);
  compute(x, w, out);
  return 0;
}
"""
READ_FILE = HEAD + "#include <cstdio>\n" + r"""
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  FILE* f = fopen("REF_PATH", "rb");  // outputs someone left on disk
  if (!f) return 1;
  size_t n = fread(out, sizeof(float), 256, f);
  fclose(f);
  return n == 256 ? 0 : 1;
}
"""
SHARED_LIB = HEAD + "#include <dlfcn.h>\n" + r"""
typedef void (*ref_fn)(const float*, const float*, float*);
extern "C" int32_t ENTRY(float* x, float* w, float* out) {
  void* h = dlopen("libreference.so", RTLD_NOW);
  ref_fn f = h ? (ref_fn)dlsym(h, "reference_forward") : nullptr;
  if (!f) return 1;
  f(x, w, out);
  return 0;
}
"""


@pytest.fixture(scope="module")
def task():
    return load_task_file(DATA / "tiny_task.py")


@pytest.fixture(scope="module")
def root(task):
    return ir.import_root(task)


def _ev(tmp_path, **over) -> Evaluator:
    # the in-process protocol (its defences still guard the GPU, OpenCL and board paths); the sandboxed
    # worker that llvm candidates run in by default has its own adversarial tests (tests/test_sandbox.py)
    over.setdefault("sandbox", False)
    cfg = EvaluatorConfig(timeout_s=90, memory_cap_gb=2.0, timing_budget_s=1.0, **over)
    return Evaluator(cfg, cache_dir=str(tmp_path))


def _cand(task, root, src: str, name: str, reps: int = 0, **subs: str):
    return l2_candidate(task, root, src, name, reps, **subs)


def _fe_upward() -> str:
    return "0x400000" if platform.machine() in ("aarch64", "arm64") else "0x800"


# --------------------------------------------------------------------------- the static check alone
@pytest.mark.parametrize(
    ("src", "rule", "line_has"),
    [
        (MEMO, "state", "static float last_out[256]"),
        (BACKGROUND, "thread", "std::thread"),
        (AFFINITY, "process", "sched_setaffinity"),
        (READ_FILE, "outside", "fopen"),
        (SHARED_LIB, "outside", "dlopen"),
    ],
)
def test_static_check_names_the_line(src, rule, line_has):
    text = src.replace("ENTRY", "k").replace("REPS", "1")
    found = [f for f in l2_guard.scan("cpp", text) if f.rule == rule]
    assert found, l2_guard.scan("cpp", text)
    lines = text.splitlines()
    assert any(line_has in lines[f.line - 1] for f in found), [(f.line, lines[f.line - 1]) for f in found]


@pytest.mark.parametrize(
    ("lang", "src", "bad"),
    [
        ("cpp", HONEST.replace("ENTRY", "k").replace("REPS", "4"), False),
        ("cpp", "namespace { constexpr int N = 4; const float LUT[4] = {1, 2, 3, 4}; }\n"
                "extern \"C\" int32_t k(float* x, float* y) {\n  static const float s[2] = {1, 2};\n"
                "  float acc[4] = {0};\n#pragma omp parallel for\n  for (int i = 0; i < N; ++i) y[i] = x[i] * LUT[i];\n"
                "  (void)s; (void)acc; return 0;\n}\n", False),
        ("cpp", "int h() { static std::vector<float> v(16); return (int)v.size(); }\n", True),
        ("cuda", "__device__ float scratch[256];\nextern \"C\" __global__ void k_kernel(float* x) { x[0] = scratch[0]; }\n", True),
        ("cuda", "__constant__ float W[4];\n__device__ __forceinline__ float f(float v) { return v * W[0]; }\n"
                 "extern \"C\" __global__ void k_kernel(float* x) {\n  __shared__ float t[32];\n"
                 "  t[threadIdx.x] = x[threadIdx.x]; __syncthreads(); x[threadIdx.x] = f(t[0]);\n}\n", False),
        ("opencl", "__global float keep[16];\n__kernel void k_kernel(__global float* x) { x[0] = keep[0]; }\n", True),
        ("opencl", "__constant float W[2] = {1.f, 2.f};\n__kernel void k_kernel(__global float* restrict x) {\n"
                   "  int i = get_global_id(0); x[i] *= W[i % 2];\n}\n", False),
        ("llvm", "@cache = internal global [4 x float] zeroinitializer\ndefine i32 @k(ptr %x) {\n  ret i32 0\n}\n", True),
        ("llvm", "@tbl = private unnamed_addr constant [2 x float] [float 1.0, float 2.0]\n"
                 "define i32 @k(ptr %x) {\n  ret i32 0 ; a global comment\n}\n", False),
    ],
)
def test_static_check_per_language(lang, src, bad):
    assert bool(l2_guard.scan(lang, src)) is bad, l2_guard.scan(lang, src)


def test_static_check_passes_the_rule_agents_gemm_kernel():
    from agents.l2_source import GemmShape, gemm_source

    for g in (GemmShape(batch=1, m=64, n=64, k=64, a=0, b=1, c=2, sa=(0, 64, 1), sb=(0, 64, 1), sc=(0, 64, 1),
                        n_params=3),
              GemmShape(batch=2, m=49, n=96, k=32, a=0, b=1, c=2, sa=(0, 32, 1), sb=(3072, 1, 32),
                        sc=(4704, 96, 1), n_params=3)):
        for lanes in (8, 16):
            assert l2_guard.scan("cpp", gemm_source(g, "leka_gemm_x", lanes)) == []


def test_apply_edit_refuses_an_illegal_source_with_its_line(task, root, tmp_path):
    from leka import tvm_adapter as A

    cand = ir.root_candidate(task, root=root)
    (kernel,) = list(ir.lowered_module(cand, A.make_target("llvm"), root.params)[1])
    src = MEMO.replace("ENTRY", "leka_memo_edit").replace("REPS", "1")
    out = apply_edit(cand, Edit(level="L2", kind="source", target=kernel,
                                payload={"language": "cpp", "text": src, "entry": "leka_memo_edit"}),
                     workdir=tmp_path, root_params=root.params)
    line = next(i for i, ln in enumerate(src.splitlines(), 1) if "static float last_out" in ln)
    assert not out.ok and "illegal L2 source" in out.error and f"line {line}:" in out.error, out.error


# --------------------------------------------------------------------------- the evaluator, end to end
def test_honest_kernel_passes_every_check(task, root, tmp_path):
    res = _ev(tmp_path).evaluate(task, _cand(task, root, HONEST, "honest_0", reps=0))
    assert res.correct and res.error_kind in (None, "timing_invalid"), (res.error_kind, res.error)
    assert res.speedup and res.speedup > 0 and res.extra["timing_input_sets"] == 2
    # both arms in the C++ loop (no Python between timed calls), as long as a C++ compiler is here
    assert res.extra["timer"] == "candidate cpp_loop, baseline cpp_loop"
    assert "fresh_seed" in res.extra


@pytest.mark.parametrize(("src", "name"), [(MEMO, "memo"), (BACKGROUND, "background"), (AFFINITY, "affinity"),
                                           (READ_FILE, "read_file"), (SHARED_LIB, "shared_lib")])
def test_evaluator_rejects_illegal_sources_before_building(task, root, tmp_path, src, name):
    res = _ev(tmp_path).evaluate(task, _cand(task, root, src, name, reps=1), time_it=False)
    assert res.error_kind == "illegal_source" and not res.compiled and not res.correct, (res.error_kind, res.error)
    assert "line " in res.error


def test_input_keyed_memo_loses_its_advantage(task, root, tmp_path):
    """Under the old protocol the memo kernel times a memcpy (a large speedup over the same kernel
    without the memo); under the new one consecutive timed calls never share inputs, so it computes
    every call, or is caught returning a stale output."""
    reps = 400
    honest = _cand(task, root, HONEST, "memo_honest", reps=reps)
    memo = _cand(task, root, MEMO, "memo_keyed", reps=reps)
    new, old = _ev(tmp_path, static_check=False), _ev(tmp_path, **OLD)
    r_old = old.evaluate(task, memo)
    r_honest = new.evaluate(task, honest)
    r_new = new.evaluate(task, memo)
    assert r_old.correct and r_honest.correct, (r_old.error, r_honest.error)
    assert r_old.speedup > 4 * r_honest.speedup, (r_old.speedup, r_honest.speedup)  # the attack worked before
    if r_new.error_kind == "stale_output":
        assert not r_new.correct
    else:  # bounds far from the memo's advantage (a memcpy against ~100k dependent adds), not the noise
        assert r_new.correct and r_new.speedup < 3 * r_honest.speedup, (r_new.speedup, r_honest.speedup)
        assert r_old.speedup > 20 * r_new.speedup, (r_old.speedup, r_new.speedup)


def test_kernel_that_finds_its_answer_in_its_output_buffer_gains_nothing(task, root, tmp_path):
    """No state, legal to the static check, correct on every checked run: under TVM's loop on one
    input set it times four comparisons; with the timed calls' output buffers kept out of step with
    the input sets, every call's buffer holds another set's result and it computes."""
    reps = 400
    honest = _cand(task, root, HONEST, "peek_honest", reps=reps)
    peek = _cand(task, root, PEEK, "peek", reps=reps)
    assert l2_guard.scan_candidate(peek) == []
    new, old = _ev(tmp_path), _ev(tmp_path, **OLD)
    r_old = old.evaluate(task, peek)
    r_honest = new.evaluate(task, honest)
    r_new = new.evaluate(task, peek)
    assert r_old.correct and r_honest.correct and r_new.correct, (r_old.error, r_honest.error, r_new.error)
    assert r_old.speedup > 4 * r_honest.speedup, (r_old.speedup, r_honest.speedup)  # the attack worked before
    assert r_new.speedup < 3 * r_honest.speedup, (r_new.speedup, r_honest.speedup)
    assert r_old.speedup > 20 * r_new.speedup, (r_old.speedup, r_new.speedup)


def test_kernel_that_stops_computing_once_timing_starts_is_stale(task, root, tmp_path):
    """State hidden from the static check (off here): correct for the checked runs, then it leaves its
    output untouched. The buffer it leaves holds another input set's result: stale_output."""
    cand = _cand(task, root, STOPS, "stops")
    res = _ev(tmp_path, static_check=False).evaluate(task, cand)
    assert res.error_kind == "stale_output" and not res.correct, (res.error_kind, res.error)
    assert "input set" in res.error
    old = _ev(tmp_path, **OLD).evaluate(task, cand)  # one input set, nothing checked: it timed nothing
    assert old.correct and old.error_kind in (None, "timing_invalid"), (old.error_kind, old.error)


def test_lean_timing_keeps_the_output_buffer_defences(task, root, tmp_path):
    """The lean timing of outputs near the memory cap (naive allocator, no held outputs, 3 input sets;
    benchmark/judge/memory.py) forced on the tiny task, whose outputs are too small for fresh zeroed pages:
    the rotation alone still gives each call a buffer that held another set's result."""
    reps = 400
    lean = _ev(tmp_path, timing_memory="lean")
    r_honest = lean.evaluate(task, _cand(task, root, HONEST, "lean_honest", reps=reps))
    r_peek = lean.evaluate(task, _cand(task, root, PEEK, "lean_peek", reps=reps))
    assert r_honest.correct and r_peek.correct, (r_honest.error, r_peek.error)
    assert r_peek.extra["timing_input_sets"] == 3 and "lean timing" in r_peek.extra["timing_memory"]
    assert r_peek.speedup < 3 * r_honest.speedup, (r_peek.speedup, r_honest.speedup)
    stops = _ev(tmp_path, static_check=False, timing_memory="lean").evaluate(task, _cand(task, root, STOPS, "lean_stops"))
    assert stops.error_kind == "stale_output" and not stops.correct, (stops.error_kind, stops.error)


def test_background_thread_kernel_fails_at_runtime_too(task, root, tmp_path):
    res = _ev(tmp_path, static_check=False).evaluate(task, _cand(task, root, BACKGROUND, "bg_rt", reps=50))
    # the output is read while the thread has not written it: whatever the buffer held (NaN included)
    assert not res.correct and res.error_kind in ("mismatch", "nan", "stale_output"), (res.error_kind, res.error)


def test_process_state_change_hidden_from_the_static_check_is_caught(task, root, tmp_path):
    src = HIDDEN_FP.replace("ROUND_MODE", _fe_upward())
    cand = _cand(task, root, src, "hidden_fp")
    assert l2_guard.scan_candidate(cand) == []  # token pasting hides the call from the lexical check
    # the compiled object still calls it (leka/ir/l2_object.py, issue 26): refused before it runs
    res = _ev(tmp_path).evaluate(task, cand, time_it=False)
    assert res.error_kind == "illegal_source" and "fesetround" in res.error, (res.error_kind, res.error)
    # with the static checks off, the runtime guard catches it ...
    res = _ev(tmp_path, static_check=False).evaluate(task, cand)
    assert res.error_kind == "process_state" and "fp.round" in res.error, (res.error_kind, res.error)
    # ... and it is what caught it: without it the same kernel is accepted
    off = _ev(tmp_path, static_check=False, process_check=False).evaluate(task, cand, time_it=False)
    assert off.correct, (off.error_kind, off.error)


def test_affinity_change_is_caught_at_runtime(task, root, tmp_path):
    import os

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs in the affinity mask to see it shrink")
    res = _ev(tmp_path, static_check=False).evaluate(task, _cand(task, root, AFFINITY, "affinity_rt"))
    assert res.error_kind == "process_state" and "cpu_affinity" in res.error, (res.error_kind, res.error)


def test_outputs_baked_in_for_the_fixed_seeds_fail_the_fresh_seed(task, root, tmp_path):
    """Constant folding of the evaluation itself: the outputs for seeds 0, 1, 2 precomputed into the
    source, picked by an input sample. The fixed seeds pass; the seed drawn per evaluation does not."""
    import torch

    model = task.make_model()
    tables, picks = [], []
    for s in (0, 1, 2):
        x = task.make_inputs(s)
        with torch.no_grad():
            y = model(*x).numpy().ravel()
        tables.append(f"static const float OUT{s}[256] = {{{', '.join(f'{v!r}f' for v in y.astype(np.float32).tolist())}}};")
        picks.append(f"  if (x[0] == {float(x[0].ravel()[0])!r}f) {{ std::memcpy(out, OUT{s}, sizeof OUT{s}); return 0; }}")
    src = HEAD + "\n".join(tables) + "\nextern \"C\" int32_t ENTRY(float* x, float* w, float* out) {\n" + \
        "\n".join(picks) + "\n  std::memset(out, 0, 256 * sizeof(float));\n  return 0;\n}\n"
    cand = _cand(task, root, src, "baked")
    assert l2_guard.scan_candidate(cand) == []  # constant tables are legal
    old = _ev(tmp_path, **OLD).evaluate(task, cand, time_it=False)
    assert old.correct, (old.error_kind, old.error)  # the attack worked before
    new = _ev(tmp_path).evaluate(task, cand, time_it=False)
    assert not new.correct and new.error_kind == "mismatch", (new.error_kind, new.error)
    assert f"seed {new.extra['fresh_seed']}" in new.error
