"""CUDA: the evaluator on the GPU (device timer, L2 flush, three-seed checks, device memory, CUDA
faults as data with a fresh child afterwards), the GPU baselines, the rule agents' CUDA edits.

Tests marked `gpu` need an NVIDIA GPU that TVM sees and run only there (`pytest -m gpu`); the
others check, on any machine, what can be checked without one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.l2_cuda import fast_math, ldg, unroll
from benchmark.judge import gpu_timing
from leka.backends import get_backend

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[1]
NO_GPU = get_backend("cuda").unavailable()
gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(NO_GPU is not None, reason=f"no CUDA GPU here: {NO_GPU}")

KERNEL = """extern "C" __global__ void __launch_bounds__(256) f_kernel(float* __restrict__ out, float* __restrict__ x) {
  float acc = 0.000000e+00f;
  for (int k = 0; k < 64; ++k) {
    acc = acc + expf(x[((((int)blockIdx.x) * 64) + k)]);
  }
  out[((int)blockIdx.x)] = logf(acc);
}"""


# ----------------------------------------------------------------------------- any machine
@pytest.mark.skipif(NO_GPU is None, reason="this machine has a CUDA GPU: the refusal is for machines without")
def test_cuda_refused_in_one_line_without_gpu(tmp_path):
    for args in (["run", "--task", "l1_mish"], ["bench", "eval", "l1_mish"]):
        r = subprocess.run([sys.executable, "-m", "leka.cli", *args, "--backend", "cuda", "--out" if args[0] == "run"
                            else "--trials", str(tmp_path / "o") if args[0] == "run" else "4"],
                           capture_output=True, text=True, timeout=300, cwd=ROOT)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2 and len(lines) == 1, (args, r.returncode, r.stderr[-1500:])
        assert "GPU" in lines[0] and "cuda" in lines[0], lines[0]


def test_cuda_fault_messages_are_recognised():
    assert gpu_timing.is_cuda_fault("CUDA: an illegal memory access was encountered")
    assert gpu_timing.is_cuda_fault("CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure")
    assert gpu_timing.is_cuda_fault("cudaErrorMisalignedAddress")
    assert not gpu_timing.is_cuda_fault("InternalError: Check failed: shape mismatch")
    assert not gpu_timing.is_cuda_fault("")


def test_l2_cuda_rules_rewrite_the_kernel_text():
    u = unroll(KERNEL)
    assert u is not None and u.count("#pragma unroll") == 1 and unroll(u) is None
    f = fast_math(KERNEL)
    assert f is not None and "__expf(" in f and "__logf(" in f and " expf(" not in f
    g = ldg(KERNEL)
    assert g is not None and "__ldg(&x[((((int)blockIdx.x) * 64) + k)])" in g and "__ldg(&out" not in g
    assert fast_math("y[i] = x[i] * 2.0f;") is None


def test_cuda_builds_without_fast_math_unless_the_user_asks(monkeypatch):
    # TVM 0.27's nvcc path adds --use_fast_math unless TVM_CUDA_NVCC_NO_FAST_MATH is set (non-empty):
    # fast math made powf(x, 2) NaN for x < 0, so RMSNorm roots were NaN on the H200
    import inspect
    import os

    from tvm.support import nvcc

    from leka import tvm_adapter as A

    assert "TVM_CUDA_NVCC_NO_FAST_MATH" in inspect.getsource(nvcc._compile_cuda_nvcc)  # what this TVM reads
    monkeypatch.delenv("TVM_CUDA_NVCC_NO_FAST_MATH", raising=False)
    A.cuda_runtime_setup()
    assert os.environ["TVM_CUDA_NVCC_NO_FAST_MATH"] == "1"
    monkeypatch.setenv("TVM_CUDA_NVCC_NO_FAST_MATH", "")  # the user's choice (empty: fast math) is kept
    A.cuda_runtime_setup()
    assert os.environ["TVM_CUDA_NVCC_NO_FAST_MATH"] == ""


def test_gpu_lock_serialises_processes(tmp_path):
    # two children take the lock in turn: the second's start is after the first's end
    code = (f"import os,sys,time; sys.path.insert(0, {str(ROOT)!r}); os.environ['LEKA_GPU_LOCK']={str(tmp_path / 'lock')!r}\n"
            "from benchmark.judge.gpu_timing import gpu_lock\n"
            "with gpu_lock():\n"
            "    a=time.time(); time.sleep(0.5); b=time.time()\n"
            "print(a, b)")
    ps = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    spans = sorted(tuple(map(float, p.communicate(timeout=60)[0].split())) for p in ps)
    assert spans[1][0] >= spans[0][1] - 1e-3, spans


def test_evaluation_child_holds_the_gpu_lock_until_it_exits(tmp_path):
    # the worker takes the lock without a `with` (checks and timing follow in other steps): it must
    # stay held until the process ends, and be free once it has
    import fcntl

    lock = tmp_path / "lock"
    code = (f"import os,sys,time; sys.path.insert(0, {str(ROOT)!r}); os.environ['LEKA_GPU_LOCK']={str(lock)!r}\n"
            "from benchmark.judge import gpu_timing\n"
            "gpu_timing.hold_gpu_lock()\n"
            "import gc; gc.collect(); print('held', flush=True); time.sleep(3)")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    with open(lock, "a+") as f:
        with pytest.raises(BlockingIOError):
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        p.wait(timeout=60)
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released with the process


def test_flushed_timer_runs_the_evaluators_flush():
    # time_flushed asks TVM's time evaluator for a flush before every timed call (cache_flush_bytes);
    # on the CPU the same code path runs with host memory
    import numpy as np

    from leka import tvm_adapter as A

    mod = A.parse_module("@I.ir_module\nclass Module:\n    @R.function\n"
                         "    def main(x: R.Tensor((256,), dtype=\"float32\")) -> R.Tensor((256,), dtype=\"float32\"):\n"
                         "        with R.dataflow():\n            y: R.Tensor((256,), dtype=\"float32\") = R.add(x, x)\n"
                         "            R.output(y)\n        return y\n")
    target = A.make_target("llvm")
    r = A.VMRunner(A.build(A.lower(mod, target), target), A.device_for("llvm"))
    fl = A.L2Flusher(r.dev, nbytes=1 << 20)
    t = A.time_flushed(r, r.to_device([np.ones(256, dtype="float32")]), 5, fl)
    assert 0 < t < 0.1, t


def test_metaschedule_on_gpu_tunes_the_unscheduled_kernels(tmp_path):
    # the GPU's tuned baseline: the database applies to the kernels before DLight, DLight schedules the
    # rest (an empty database: all of them); its cache folder is not the one of the older flow
    from benchmark import baselines
    from benchmark.roots import load_root
    from benchmark.task import resolve
    from leka import tvm_adapter as A

    task = resolve("l1_mish")
    root = load_root(task)
    target = A.make_target("cuda")
    funcs = A.prim_funcs(baselines.ms_input(task, "cuda", root, target))
    assert funcs and not any(A.is_scheduled(f) for f in funcs.values())
    tuned = A.prim_funcs(baselines.tuned_module(task, root, "cuda", target, str(tmp_path)))
    assert tuned.keys() == funcs.keys() and all(A.is_scheduled(f) for f in tuned.values())
    assert baselines.ms_dir(task, "cuda", 16, str(tmp_path)).name == "trials16-unscheduled"
    assert baselines.ms_dir(task, "llvm", 16, str(tmp_path)).name == "trials16"


def test_rule_agents_cuda_edits_build_without_a_gpu(tmp_path):
    # codegen needs no GPU: the L1 traces (thread binding, shared memory, vector loads) and the L2
    # CUDA source edits must apply and build here, nvcc-checked where nvcc exists
    from agents.rules import make_rule_agents
    from benchmark.roots import load_root
    from benchmark.task import resolve
    from leka import ir
    from leka.core.protocols import AgentContext
    from leka.ir.edits import apply_edit

    task = resolve("l1_matmul_square")
    root = load_root(task)
    cand = ir.root_candidate(task, "cuda", root)
    agents = make_rule_agents("cuda", root_params=root.params)
    l1 = agents["L1"].propose(cand, AgentContext(task_id=task.id, backend="cuda", level="L1", variants=1))
    assert l1 and "shared memory" in l1[0].rationale, [e.rationale for e in l1]
    out = apply_edit(cand, l1[0], workdir=tmp_path, root_params=root.params)
    assert out.error is None, out.error
    l2 = agents["L2"].propose(out.candidate, AgentContext(task_id=task.id, backend="cuda", level="L2", variants=1))
    assert l2 and l2[0].payload["language"] == "cuda", l2
    out2 = apply_edit(out.candidate, l2[0], workdir=tmp_path, root_params=root.params)
    assert out2.error is None, out2.error
    assert len(out2.candidate.l1) == 1 and len(out2.candidate.l2) == 1


# ----------------------------------------------------------------------------- on a GPU
@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    from benchmark.judge import Evaluator
    from leka.core.config import EvaluatorConfig

    cfg = EvaluatorConfig(timeout_s=300, memory_cap_gb=16.0, timing_budget_s=1.0)
    return Evaluator(cfg, "cuda", cache_dir=str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def task():
    from benchmark.task import resolve

    return resolve("l1_mish")


@pytest.fixture(scope="module")
def ev_inproc(tmp_path_factory):
    """The pre-sandbox path (evaluator.sandbox=false): the candidate in the evaluation process."""
    from benchmark.judge import Evaluator
    from leka.core.config import EvaluatorConfig

    cfg = EvaluatorConfig(timeout_s=300, memory_cap_gb=16.0, timing_budget_s=1.0, sandbox=False)
    return Evaluator(cfg, "cuda", cache_dir=str(tmp_path_factory.mktemp("cache")))


def _l2_cuda(task, tmp_path, rewrite, edit_check: bool = True):
    """The root's first kernel as an L2 CUDA edit, its text passed through rewrite(head, body);
    `edit_check=False`: the edit made with the honest text, then the text swapped (no edit-time check)."""
    from agents.l2_cuda import RuleCudaL2Agent
    from benchmark.roots import load_root
    from leka import ir
    from leka import tvm_adapter as A
    from leka.core.types import Edit
    from leka.ir.edits import apply_edit

    root = load_root(task)
    cand = ir.root_candidate(task, "cuda", root)
    target = A.make_target("cuda")
    funcs = A.prim_funcs(ir.lower_layers(cand, target, root.params).scheduled)
    name = next(iter(funcs))
    text = RuleCudaL2Agent(root_params=root.params).kernel_source(funcs[name], name, target)
    head, body = text.split("{", 1)
    new = rewrite(head, body)
    out = apply_edit(cand, Edit(level="L2", kind="source", target=name,
                                payload={"language": "cuda", "text": new if edit_check else text,
                                         "entry": f"{name}_kernel"}),
                     workdir=tmp_path, root_params=root.params)
    assert out.error is None, out.error
    if edit_check:
        return out.candidate
    l2 = {k: e.model_copy(update={"text": new}) for k, e in out.candidate.l2.items()}
    return out.candidate.model_copy(update={"l2": l2})


@gpu
@needs_gpu
def test_root_on_gpu_runs_in_the_sandboxed_worker(task, ev):
    # issue 26: the CUDA candidate and the DLight baseline each in a sandboxed worker that set the device
    # up itself (the judge never touches CUDA), the driver's ioctls allowed, the judge's clock
    res = ev.evaluate(task)
    assert res.correct and res.compiled, res.error
    assert "seccomp" in res.extra["sandbox"], res.extra
    assert res.extra["timer"] == "candidate sandbox, baseline sandbox", res.extra
    assert res.speedup is not None and 0.7 < res.speedup < 1.4, res  # DLight against itself


@gpu
@needs_gpu
def test_rmsnorm_root_on_gpu_is_correct(ev):
    # x.pow(2).mean(-1): with nvcc's fast math the DLight root was NaN (powf as exp2(2 log2 x)); built
    # without it (cuda_runtime_setup), it matches PyTorch on every checked seed
    from benchmark.task import resolve

    res = ev.evaluate(resolve("l1_rmsnorm"), time_it=False)
    assert res.compiled and res.correct, (res.error_kind, res.error)


@gpu
@needs_gpu
def test_cuda_kernel_that_writes_its_input_is_caught(task, ev, tmp_path):
    import re

    def clobber(head: str, body: str) -> str:
        ins = [p for p in re.findall(r"\*\s*(?:__restrict__\s*)?(\w+)\s*[,)]", head) if not p.startswith(("T_", "compute"))]
        assert ins, head
        body = body.rstrip().rstrip("}")
        return head + "{" + body + f"  if (blockIdx.x == 0 && threadIdx.x == 0) {{ {ins[0]}[0] = 12345.0f; }}\n}}"

    res = ev.evaluate(task, _l2_cuda(task, tmp_path, clobber), time_it=False)
    assert not res.correct and res.error_kind == "input_mutated", (res.error_kind, res.error)


@gpu
@needs_gpu
@pytest.mark.parametrize("baseline", ["untuned", "torch"])
def test_cuda_device_global_state_is_caught(task, tmp_path, baseline):
    # a __device__ global that outlives a call: computed once, skipped after (the static check is off
    # here, so the worker's checks alone must reject it). Issue 43: against a torch baseline too, whose
    # evaluation timed the candidate in the judge's process on one fixed input set before
    from benchmark.judge import Evaluator
    from leka.core.config import EvaluatorConfig

    def once(head: str, body: str) -> str:
        body = body.rstrip().rstrip("}")
        return ("__device__ int leka_done = 0;\n" + head + "{\n  if (leka_done) return;\n" + body
                + "  __threadfence();\n  if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) leka_done = 1;\n}")

    ev = Evaluator(EvaluatorConfig(timeout_s=300, memory_cap_gb=16.0, timing_budget_s=1.0, static_check=False),
                   "cuda", cache_dir=str(tmp_path))
    res = ev.evaluate(task, _l2_cuda(task, tmp_path, once, edit_check=False), baseline=baseline)
    assert not res.correct and res.error_kind in ("mismatch", "stale_output"), (res.error_kind, res.error)
    assert "seccomp" in res.extra["sandbox"], res.extra


@gpu
@needs_gpu
def test_root_on_gpu_is_checked_timed_and_measured(task, ev_inproc):
    ev = ev_inproc
    res = ev.evaluate(task)
    assert res.correct and res.compiled, res.error
    assert res.seeds == [0, 1, 2]
    assert res.speedup is not None and 0.5 < res.speedup < 2.0, res  # DLight against itself
    assert res.t_candidate_s and res.t_candidate_s < 0.1
    assert res.peak_device_bytes and res.peak_device_bytes > 0
    assert "L2 flushed" in res.extra.get("timer", "")


@gpu
@needs_gpu
@pytest.mark.parametrize("kind", ["torch", "torch_compile", "torch_compile_cg"])
def test_torch_baselines_on_gpu(task, ev, kind):
    # issue 43: the candidate in its sandboxed worker, the torch baseline in a trusted worker of its own
    # on the same fresh windows (benchmark/judge/sandbox/baseline.py), each arm's drawn call checked against
    # the other's (a CUDA graph's replayed outputs recomputed on their slot)
    res = ev.evaluate(task, baseline=kind)
    assert res.correct, res.error
    assert res.speedup is not None and res.speedup > 0 and res.t_baseline_s > 0, res
    assert "seccomp" in res.extra["sandbox"], res.extra
    assert res.extra["timer"] == "candidate sandbox, baseline worker (trusted, not sandboxed)", res.extra


@gpu
@needs_gpu
def test_cuda_fault_is_data_and_the_next_child_is_fresh(task, ev, tmp_path):
    def fault(head: str, body: str) -> str:
        return head + "{\n  if (threadIdx.x == 0) { ((volatile float*)0x8)[0] = 1.0f; }\n" + body

    res = ev.evaluate(task, _l2_cuda(task, tmp_path, fault))
    assert not res.correct and res.error_kind == "gpu_fault", (res.error_kind, res.error)
    again = ev.evaluate(task)
    assert again.correct, again.error


@gpu
@needs_gpu
def test_rule_agents_cuda_edits_evaluate_correct(task, ev, tmp_path):
    from agents.rules import make_rule_agents
    from benchmark.roots import load_root
    from leka import ir
    from leka.core.protocols import AgentContext
    from leka.ir.edits import apply_edit

    root = load_root(task)
    cand = ir.root_candidate(task, "cuda", root)
    agents = make_rule_agents("cuda", root_params=root.params)
    for lv in ("L1", "L2"):
        edits = agents[lv].propose(cand, AgentContext(task_id=task.id, backend="cuda", level=lv, variants=2))
        assert edits, lv
        out = apply_edit(cand, edits[0], workdir=tmp_path, root_params=root.params)
        assert out.error is None, (lv, out.error)
        res = ev.evaluate(task, out.candidate)
        assert res.correct, (lv, edits[0].rationale, res.error)


@gpu
@needs_gpu
def test_leka_run_cuda_through_rpc(tmp_path):
    """`leka run --backend cuda --device rpc://...` with the tracker and the board-side server on
    this GPU machine (a Jetson's role): built here, checked and timed by the board's server."""
    import json

    from candidate_tree import Tree
    from leka.ir import remote

    with remote.start_tracker() as tr:
        srv = remote.start_server(tracker=(tr.host, tr.port), key="cuda")
        try:
            url = f"rpc://{tr.host}:{tr.port}/cuda"
            r = subprocess.run([sys.executable, "-m", "leka.cli", "run", "--task", str(DATA / "tiny_task.py"),
                                "--backend", "cuda", "--device", url, "--budget", "5m", "--max-evals", "3",
                                "--quiet", "--out", str(tmp_path)], capture_output=True, text=True, timeout=900,
                               cwd=ROOT, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                   filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})
        finally:
            srv.stop()
    assert r.returncode == 0, r.stderr[-2000:]
    (summary,) = tmp_path.glob("*/summary.json")
    s = json.loads(summary.read_text())
    assert s["backend"] == "cuda" and s["best_correct"] and s["evaluations"] == 3
    tree = Tree(Path(s["run_dir"]))
    try:
        root = min((n for n in tree.nodes() if n.result is not None), key=lambda n: n.id)
        # the root was checked and timed on the board: its device, device-timed pairs against DLight
        assert root.result.correct and root.result.extra["device"] == url and root.result.n_pairs >= 1
    finally:
        tree.close()
