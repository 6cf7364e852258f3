"""The failure taxonomy (issue 47, leka.core.failures): each class from a candidate that really fails that
way, judged by the real evaluator: llvm here, OpenCL on PoCL, CUDA on the GPU machine (marked `gpu`).
The class is read off the EvalResult the evaluator returns (`failure_class`), beside its error_kind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tiny_l2 import HEAD, l2_candidate

from benchmark.judge import Evaluator
from benchmark.roots import load_root
from benchmark.task import load_task_file
from leka import ir
from leka.core.config import EvaluatorConfig
from leka.core.failures import FAILURE_CLASSES, classify

DATA = Path(__file__).parent / "data"
SIG = 'extern "C" int32_t ENTRY(float* x, float* w, float* out) '


@pytest.fixture(scope="module")
def task():
    return load_task_file(DATA / "tiny_task.py")


@pytest.fixture(scope="module")
def root(task):
    return load_root(task)


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    return Evaluator(EvaluatorConfig(timeout_s=60, memory_cap_gb=2.0, timing_budget_s=1.0),
                     cache_dir=str(tmp_path_factory.mktemp("cache")))


# each: (class, error_kind, the L2 C++ body of the tiny task's one kernel)
LLVM = {
    # reads 256 GiB past its input: the sandboxed worker dies of SIGSEGV
    "out_of_bounds": ("memory", "crash", "{ for (long i = 0; i < 256; ++i) out[i] = x[i + (1L << 36)]; return 0; }"),
    "syntax": ("syntax_api", "compile", "{ return out[0] +; }"),
    "wrong_values": ("numerics", "mismatch", "{ for (int i = 0; i < 256; ++i) out[i] = x[i] * 2.f; return 0; }"),
    # a kernel that starts a thread (work left running after the call, racing the next one)
    "thread": ("parallelism", "illegal_source",
               "{ std::thread t([=] { for (int i = 0; i < 256; ++i) out[i] = x[i]; }); t.detach(); return 0; }"),
    # an illegal instruction (the compiler's trap): SIGILL, none of the named classes
    "trap": ("other", "crash", "{ if (x[0] == x[0]) __builtin_trap(); return 0; }"),
}


@pytest.mark.parametrize("name", list(LLVM))
def test_llvm_candidate_fails_in_its_class(task, root, ev, name):
    cls, kind, body = LLVM[name]
    head = HEAD + ("#include <thread>\n" if name == "thread" else "")
    res = ev.evaluate(task, l2_candidate(task, root, head + SIG + body + "\n", name), time_it=False)
    assert not res.correct and res.error_kind == kind, (res.error_kind, res.error)
    assert res.failure_class == cls, (res.failure_class, res.error)
    assert res.model_dump()["failure_class"] == cls  # in the JSON every report reads


def test_hang_is_a_timeout_and_memory_cap_is_memory(task, tmp_path):
    hang = Evaluator(EvaluatorConfig(timeout_s=12), cache_dir=str(tmp_path / "a")).evaluate(
        task, ir.candidate_from_file(task, DATA / "adversarial" / "hang.py"), time_it=False)
    assert (hang.error_kind, hang.failure_class) == ("timeout", "timeout"), hang.error
    oom = Evaluator(EvaluatorConfig(timeout_s=120, memory_cap_gb=1.5), cache_dir=str(tmp_path / "b")).evaluate(
        task, ir.candidate_from_file(task, DATA / "adversarial" / "over_memory.py"), time_it=False)
    assert (oom.error_kind, oom.failure_class) == ("oom", "memory"), oom.error


def test_a_correct_result_has_no_class(task, ev):
    res = ev.evaluate(task, time_it=False)
    assert res.correct and res.failure_class is None
    assert classify("timing_invalid", "interval too wide", correct=True) is None
    assert set(FAILURE_CLASSES) == {"memory", "syntax_api", "numerics", "parallelism", "timeout", "other"}


# ----------------------------------------------------------------------------- OpenCL on PoCL
def _opencl_candidate(task, attr: str, body: str):
    from benchmark.roots import load_root
    from leka import tvm_adapter as A
    from leka.ir import L2Entry

    root = load_root(task)
    cand = ir.root_candidate(task, "opencl", root)
    ((kernel, key),) = list(ir.lower_layers(cand, A.make_target("opencl"), root.params).l2_keys.items())
    entry = f"{kernel}_kernel"
    # the parameters in the order TVM's generated kernel has them (output, weight, input)
    text = (f"__kernel void {attr}{entry}(__global float* restrict out, __global float* restrict w, "
            f"__global float* restrict x) {{ {body} }}\n")
    return cand.model_copy(update={"l2": {key: L2Entry(kernel=kernel, language="opencl", text=text, entry=entry)}})


HONEST_CL = "int i = get_global_id(0); if (i < 256) { float v = x[i]; out[i] = (v > 0.f ? v : 0.f) * w[i % 64] + v; }"
OPENCL = {
    # the kernel demands 7 work items per group; the launch TVM makes has another size: the runtime refuses
    "work_group": ("parallelism", "__attribute__((reqd_work_group_size(7, 1, 1))) ", HONEST_CL),
    # PoCL's compiler: CL_BUILD_PROGRAM_FAILURE ("expected expression"), reported when the worker loads it
    "syntax": ("syntax_api", "", "int i = get_global_id(0) +; "),
    "wrong_values": ("numerics", "", "int i = get_global_id(0); if (i < 256) out[i] = x[i] * 2.f;"),
}


@pytest.mark.parametrize("name", list(OPENCL))
def test_opencl_candidate_fails_in_its_class(opencl_plugin, task, tmp_path, name):
    cls, attr, body = OPENCL[name]
    ev = Evaluator(EvaluatorConfig(timeout_s=120, timing_budget_s=1.0), backend="opencl", cache_dir=str(tmp_path))
    res = ev.evaluate(task, _opencl_candidate(task, attr, body), time_it=False)
    assert not res.correct and res.failure_class == cls, (res.error_kind, res.failure_class, res.error)


# ----------------------------------------------------------------------------- CUDA (the GPU machine)
def _cuda_case(name: str):
    """rewrite(head, body) of the root's first CUDA kernel (tests/test_gpu.py's `_l2_cuda`)."""
    def first_param(head: str) -> str:
        m = re.search(r"float\*\s*(?:__restrict__\s*)?(\w+)", head)
        assert m, head
        return m.group(1)

    def oob(head: str, body: str) -> str:  # a write 32 GiB past the first buffer: an illegal address
        return head + "{\n  if (threadIdx.x == 0) { " + first_param(head) + "[(size_t)1 << 33] = 1.0f; }\n" + body

    def launch(head: str, body: str) -> str:  # compiled for 32 threads a block, launched with more
        new = re.sub(r"__launch_bounds__\(\d+\)", "__launch_bounds__(32)", head)
        assert new != head, head
        return new + "{" + body

    def shared(head: str, body: str) -> str:  # 256 KiB of static shared memory: over every GPU's limit
        return (head + "{\n  __shared__ float big[65536];\n  big[threadIdx.x * 256] = 1.0f;\n  __syncthreads();\n"
                "  if (big[(threadIdx.x * 256 + 255) % 65536] > 2.0f) { return; }\n" + body)

    def syntax(head: str, body: str) -> str:
        return head + "{\n  int broken = +;\n" + body

    return {"oob": ("memory", oob, True), "launch": ("parallelism", launch, False),
            "shared": ("memory", shared, False), "syntax": ("syntax_api", syntax, False)}[name]


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["oob", "launch", "shared", "syntax"])
def test_cuda_candidate_fails_in_its_class(tmp_path, name):
    from test_gpu import NO_GPU, _l2_cuda

    if NO_GPU is not None:
        pytest.skip(f"no CUDA GPU here: {NO_GPU}")
    from benchmark.task import resolve

    task = resolve("l1_mish")
    cls, rewrite, edit_check = _cuda_case(name)
    ev = Evaluator(EvaluatorConfig(timeout_s=300, memory_cap_gb=16.0, timing_budget_s=1.0), "cuda",
                   cache_dir=str(tmp_path / "cache"))
    res = ev.evaluate(task, _l2_cuda(task, tmp_path, rewrite, edit_check=edit_check), time_it=False)
    assert not res.correct and res.failure_class == cls, (res.error_kind, res.failure_class, res.error)


def test_gpu_fault_and_compile_messages_as_the_gpu_machine_printed_them():
    # texts the judge stored on an H100 (2026-12-07): the worker's setup hit an illegal access; nvcc's
    # failure quoted the source first, its diagnostic at the end
    from benchmark.judge.errors import short_error

    fault = ("starting the sandboxed worker: worker setup: Traceback (most recent call last): ... "
             "RuntimeError: CUDA Runtime Error: cudaErrorIllegalAddress (700): an illegal memory access was encountered")
    assert classify("gpu_fault", fault) == "memory"
    src = "\n".join(["#ifdef __CUDACC_RTC__", "  #include <cuda/std/cstdint>", "  using cuda::std::uint8_t;",
                     "#endif", "extern \"C\" __global__ void k(float* a) { __shared__ float s[1 << 16]; }",
                     "ptxas error   : Entry function 'k' uses too much shared data (0x40000 bytes, 0xc000 max)"])
    msg = short_error(RuntimeError(src))
    assert "uses too much shared data" in msg and "#ifdef" not in msg
    assert classify("compile", msg) == "memory"
