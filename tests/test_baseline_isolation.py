"""Issue 43: the baseline is built out of the candidate's reach. The judge builds the TVM baseline on a
second thread while the candidate builds (benchmark/baselines.py `start_prep`), in one process: no
process-wide state of the candidate's build may reach the baseline's.

- llvm: an L2 C++ library is loaded RTLD_GLOBAL for TVM's JIT. It is sealed first (leka/ir/l2.py
  `seal`): its entry renamed to `leka_l2_<digest>_<entry>`, every other definition local, so a kernel
  named like the PrimFunc it replaces (the default entry) or a source that also defines the symbols a
  baseline looks up (`__tvm_ffi_main`, `__tvm_ffi_<kernel>`, `<kernel>_compute_`) reaches nothing but
  its own `call_extern`.
- CUDA / OpenCL: the splice is a TVM global callback (`tvm_callback_cuda_postproc`); it is one
  dispatcher that splices only on the thread whose `source_postproc` is active
  (leka/tvm_adapter/sources.py).
- Compile options: only the backend's allow-list reaches the target (LLVM's `cl-opt` sets process-wide
  LLVM flags the baseline's codegen would read).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
import tvm_ffi

from benchmark import baselines
from benchmark.roots import load_root
from benchmark.task import load_task_file
from leka import ir
from leka import tvm_adapter as A
from leka.backends import get_backend
from leka.ir import L2Entry
from leka.ir import l2 as L2

DATA = Path(__file__).parent / "data"
NO_GPU = get_backend("cuda").unavailable()
REPEATS = 3
# the kernel writes 42 everywhere: a baseline that ran it would show it
ATTACK = r"""#include <cstdint>
extern "C" int32_t KERNEL(float* x, float* w, float* out) { for (int i = 0; i < 256; ++i) out[i] = 42.f; return 0; }
extern "C" int __tvm_ffi_main(void*, void*, int, void*) { return -7; }
extern "C" int __tvm_ffi_KERNEL(void*, void*, int, void*) { return -7; }
extern "C" int KERNEL_compute_(int, float*, float*, float*) { return -7; }
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    task = load_task_file(DATA / "tiny_task.py")
    cache = tmp_path_factory.mktemp("cache")
    return task, load_root(task, str(cache)), str(cache)


def _attack(task, root, backend: str = "llvm"):
    """The root with its one kernel replaced by ATTACK; entry None: the symbol is the PrimFunc's name."""
    target = A.make_target(backend)
    cand = ir.root_candidate(task, backend, root)
    ((kernel, key),) = list(ir.lower_layers(cand, target, root.params).l2_keys.items())
    text = ATTACK.replace("KERNEL", kernel)
    return kernel, cand.model_copy(update={"l2": {key: L2Entry(kernel=kernel, language="cpp", text=text)}})


def _at_once(*fns):
    """Run the builds on threads released together (as the judge's candidate build and `start_prep`)."""
    out: list = [None] * len(fns)
    errors: list[BaseException] = []
    gate = threading.Barrier(len(fns))

    def body(i, fn):
        gate.wait()
        try:
            out[i] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised on the test's thread
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i, fn)) for i, fn in enumerate(fns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


def _run(ex, x: np.ndarray, backend: str = "llvm") -> np.ndarray:
    return np.asarray(A.VMRunner(ex, A.device_for(backend))(x)[0])


def test_sealed_library_exports_the_entry_alone(tiny, tmp_path):
    task, root, _ = tiny
    kernel, cand = _attack(task, root)
    comp = ir.compile_l2_source("cpp", next(iter(cand.l2.values())).text, tmp_path)
    sealed = L2.check_symbol(comp, kernel)
    assert sealed.symbol == L2.sealed_symbol(comp.digest, kernel) and sealed.symbol.startswith("leka_l2_")
    if shutil.which("nm") is None:
        pytest.skip("nm (binutils) not installed: the library's symbol table cannot be listed")
    dyn = subprocess.run(["nm", "-D", "--defined-only", str(sealed.so)], capture_output=True, text=True,
                         check=True).stdout
    assert [ln.split()[-1] for ln in dyn.splitlines() if ln.strip()] == [sealed.symbol]
    with pytest.raises(L2.L2Error, match="does not export"):
        L2.check_symbol(comp, "no_such_entry")


@pytest.mark.parametrize("so_cache", [False, True], ids=["jit", "kernel_cache"])
def test_llvm_baseline_built_beside_an_l2_candidate_stays_clean(tiny, so_cache):
    task, root, cache = tiny
    target = A.make_target("llvm")
    x = task.make_inputs(0)[0].numpy()

    def baseline():
        return baselines.prebuild("untuned", task=task, root=root, backend="llvm", target=target,
                                  cache_dir=cache, so_cache=so_cache, executable_only=True)

    clean = _run(baseline(), x)  # before any candidate's library is in the process
    kernel, cand = _attack(task, root)
    for _ in range(REPEATS):
        built, base = _at_once(lambda: ir.build_candidate(cand, target, root.params, l2_dir=Path(cache) / "l2",
                                                          kernel_cache=str(Path(cache) / "kernels")), baseline)
        # the candidate's kernel is the one it runs (loaded here by choice: the judge's worker loads it)
        assert np.all(_run(ir.load_l2(built).executable, x) == 42.0)
        np.testing.assert_array_equal(_run(base, x), clean)
        ll = A.inspect_source(base, "llvm")
        if not so_cache:  # a kernel-cached executable's kernels are libraries, no IR kept
            assert ll and "leka_l2_" not in ll
            assert not re.search(r"call [^\n]*@" + re.escape(kernel) + r"\(", ll)
    np.testing.assert_allclose(clean, task.make_model()(task.make_inputs(0)[0]).detach().numpy(), rtol=1e-5,
                               atol=1e-5)


def test_splice_callback_is_the_building_threads_alone():
    hook = get_backend("cuda").source_hook
    seen: dict[str, str] = {}
    inside, done = threading.Event(), threading.Event()

    def other_thread():
        inside.wait()
        seen["other"] = str(tvm_ffi.get_global_func(hook)("__global__ void k() {}", None))
        done.set()

    t = threading.Thread(target=other_thread)
    t.start()
    with A.source_postproc("cuda", lambda src: src + "// spliced"):
        seen["own"] = str(tvm_ffi.get_global_func(hook)("__global__ void k() {}", None))
        inside.set()
        done.wait(30)  # the other thread calls the hook while this one's splice is active
    t.join()
    assert seen == {"own": "__global__ void k() {}// spliced", "other": "__global__ void k() {}"}
    assert str(tvm_ffi.get_global_func(hook)("src", None)) == "src"  # none active after the block


def test_compile_options_outside_the_allow_list_are_refused(tiny):
    task, root, _ = tiny
    cand = ir.root_candidate(task, root=root).model_copy(update={"target_opts": {"cl-opt": ["-debug-pass=x"]}})
    with pytest.raises(ValueError, match="cl-opt"):
        ir.build_candidate(cand, A.make_target("llvm"), root.params)


def _spliced_cuda(task, root):
    """The root on CUDA with its one kernel's text as an L2 splice carrying a marker (same outputs)."""
    from agents.l2_cuda import RuleCudaL2Agent

    target = A.make_target("cuda")
    cand = ir.root_candidate(task, "cuda", root)
    layers = ir.lower_layers(cand, target, root.params)
    ((name, key),) = list(layers.l2_keys.items())
    text = RuleCudaL2Agent(root_params=root.params).kernel_source(layers.scheduled[name], name, target)
    head, body = text.split("{", 1)
    evil = head + "{ /* " + MARKER + " */ if (((int)blockIdx.x) >= 0) { " + body + "\n}"
    return cand.model_copy(update={"l2": {key: L2Entry(kernel=name, language="cuda", text=evil,
                                                       entry=f"{name}_kernel")}})


def _cuda_builds(task, root, cache: str):
    """Candidate and untuned baseline built at once, REPEATS times: [(candidate, baseline)]."""
    target = A.make_target("cuda")
    cand = _spliced_cuda(task, root)

    def baseline():
        return baselines.prebuild("untuned", task=task, root=root, backend="cuda", target=target,
                                  cache_dir=cache, executable_only=True)

    return [tuple(_at_once(lambda: ir.build_candidate(cand, target, root.params).executable, baseline))
            for _ in range(REPEATS)]


MARKER = "leka_spliced_marker"
NO_CUDA_CODEGEN = tvm_ffi.get_global_func("target.build.cuda", allow_missing=True) is None


@pytest.mark.skipif(NO_CUDA_CODEGEN, reason="this TVM has no CUDA codegen (target.build.cuda)")
def test_cuda_baseline_source_built_beside_a_spliced_candidate_stays_clean(tiny):
    # CUDA C is generated (and kept in the module) without a GPU: before the dispatcher, 3 of 3 of
    # these baselines carried the candidate's kernel text
    task, root, cache = tiny
    for cand_ex, base_ex in _cuda_builds(task, root, cache):
        assert MARKER in A.runtime_source(cand_ex)
        assert MARKER not in A.runtime_source(base_ex)


@pytest.mark.gpu
@pytest.mark.skipif(NO_GPU is not None, reason=f"no CUDA GPU here: {NO_GPU}")
def test_cuda_baseline_built_beside_a_spliced_candidate_computes_as_untuned(tiny):
    task, root, cache = tiny
    x = task.make_inputs(0)[0].numpy()
    clean = _run(baselines.prebuild("untuned", task=task, root=root, backend="cuda", target=A.make_target("cuda"),
                                    cache_dir=cache, executable_only=True), x, "cuda")
    for cand_ex, base_ex in _cuda_builds(task, root, cache):
        assert MARKER not in A.runtime_source(base_ex)
        np.testing.assert_array_equal(_run(base_ex, x, "cuda"), clean)
        np.testing.assert_allclose(_run(cand_ex, x, "cuda"), clean, rtol=1e-5, atol=1e-5)
