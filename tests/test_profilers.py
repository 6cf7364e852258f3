"""Profilers on real lowered modules: FLOPs and bytes against the formulas, op kinds, and a per-kernel
report of the MobileNetV2 example (the measured roof and its cache: tests/test_roof.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark.task import load_task_file
from leka import ir
from leka import tvm_adapter as A
from profilers.flops import buffer_bytes, classify, count_flops, kernel_cost
from profilers.profile import asm_functions, isa_counts, profile_candidate
from profilers.report import ProfileReport

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "benchmark" / "examples"

MM_TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(96, 80, bias=False)

    def forward(self, x):
        return self.fc(x)

def get_inputs():
    return [torch.randn(48, 96)]

def get_init_inputs():
    return []
'''


def lowered(path: Path):
    task = load_task_file(path)
    root = ir.import_root(task)
    c = ir.root_candidate(task, root=root)
    return A.prim_funcs(A.lower(ir.relax_module(c, root.params), A.make_target("llvm")))


@pytest.fixture(scope="module")
def mbv2_funcs():
    return lowered(EXAMPLES / "mbv2_block.py")


@pytest.fixture(scope="module")
def llama_funcs():
    return lowered(EXAMPLES / "llama_block.py")


@pytest.fixture(scope="module")
def mbv2_report() -> ProfileReport:
    task = load_task_file(EXAMPLES / "mbv2_block.py")
    return profile_candidate(ir.root_candidate(task), repeat=3)


def test_matmul_flops_and_bytes_match_the_formula(tmp_path):
    f = tmp_path / "mm.py"
    f.write_text(MM_TASK)
    funcs = lowered(f)
    (name, mm), = [(n, fn) for n, fn in funcs.items() if classify(fn) == "matmul"]
    m, k, n = 48, 96, 80
    flops, nbytes = kernel_cost(mm)
    assert flops == 2 * m * k * n
    assert count_flops(mm) == 2 * m * k * n  # the fallback visitor agrees with TVM's estimator
    assert nbytes == 4 * (m * k + k * n + m * n)


def test_conv_flops_match_the_formula(mbv2_funcs):
    c, h, hw = 32, 128, 28 * 28
    kinds = {n: classify(f) for n, f in mbv2_funcs.items()}
    convs = [n for n, k in kinds.items() if k == "conv"]
    dws = [n for n, k in kinds.items() if k == "depthwise_conv"]
    assert len(convs) == 2 and len(dws) == 1, kinds
    for n in convs:  # both 1x1 convs: 32 -> 128 and 128 -> 32 channels
        assert kernel_cost(mbv2_funcs[n])[0] == 2 * c * h * hw
        assert count_flops(mbv2_funcs[n]) == 2 * c * h * hw
    assert kernel_cost(mbv2_funcs[dws[0]])[0] == 2 * h * 9 * hw  # 3x3 depthwise
    # expand conv: input (1,32,28,28) + weight (128,32,1,1) + output (1,128,28,28), fp32
    assert sorted(buffer_bytes(mbv2_funcs[n]) for n in convs) == [4 * (c * hw + h * c + h * hw)] * 2


def test_classify_real_modules(mbv2_funcs, llama_funcs):
    kinds = {n: classify(f) for n, f in {**mbv2_funcs, **llama_funcs}.items()}
    for n, k in kinds.items():
        if n.startswith("fused_batch_norm"):
            assert k == "injective", (n, k)
        if n.startswith("matmul"):  # q/k/v/o, batched attention and the MLP matmuls
            assert k == "matmul", (n, k)
        if "softmax" in n or n.startswith("fused_mean"):
            assert k == "reduction", (n, k)
        if n.startswith("fused_reshape") and "transpose" in n and not any(
                w in n for w in ("add", "divide", "multiply", "sigmoid")):
            assert k == "layout", (n, k)
    assert sum(k == "layout" for k in kinds.values()) >= 3
    assert sum(k == "matmul" for k in kinds.values()) == 4


def test_mbv2_report(mbv2_report):
    r = mbv2_report
    assert r.kernels and all(not k.name.startswith("vm.") for k in r.kernels)
    assert any(b.name.startswith("vm.builtin.alloc") for b in r.builtins)
    assert 0 < sum(k.share for k in r.kernels) <= 1.0 + 1e-9
    hot = r.hottest()
    assert hot is not None and hot.kind in ("conv", "matmul", "depthwise_conv")
    assert r.kernel_count == sum(k.calls for k in r.kernels) == 6  # BN+ReLU6 kernel runs twice
    assert [k.kind for k in r.kernels if k.calls == 2] == ["injective"]
    assert r.hottest("injective").kind == "injective" and r.hottest("layout") is None
    for k in r.kernels:
        assert k.seconds > 0 and k.flops > 0 and k.bytes > 0
        assert k.gflops == pytest.approx(k.flops / (k.seconds / k.calls) / 1e9)
        level, bw = r.peaks.level_for(k.bytes)  # the level its working set fits in (tests/test_roof.py)
        assert k.level == level and k.roof_gflops == pytest.approx(min(r.peaks.gflops, k.intensity * bw))
        assert k.roof_fraction == pytest.approx(k.roof_s / k.per_call_s)
        # nothing is scheduled, so no ISA evidence can matter yet and the asm is not printed
        # (test_hw_sensing checks the counts of scheduled kernels)
        assert k.vector_fma is None and not k.scheduled
    assert r.planned_bytes and r.planned_bytes > 0 and r.peak_rss_bytes > 0
    text = r.text(max_kernels=3)
    assert hot.name in text and "more kernels" in text and len(text.splitlines()) <= 8
    again = ProfileReport.model_validate_json(r.model_dump_json())
    assert again.hottest().name == hot.name and again.peaks.gflops == r.peaks.gflops


def test_asm_split_and_isa_counts():
    asm = "\n".join([
        "__tvm_ffi_k:", "\tcallq\tk_compute_", ".Lfunc_end0:",
        "k_compute_:", "\tvfmadd231ps\t%zmm1, %zmm2, %zmm0", "\tvaddps\t%ymm1, %ymm2, %ymm3",
        ".LBB1_2:", "\tvfmadd213ss\t%xmm1, %xmm2, %xmm0", "\tvmovups\t%zmm0, (%rax)",
        "other:", "\tvfmadd231ps\t%zmm1, %zmm2, %zmm0"])
    funcs = asm_functions(asm)
    assert set(funcs) == {"__tvm_ffi_k", "k_compute_", "other"}
    c = isa_counts(funcs["k_compute_"])
    assert c == {"vector_insns": 2, "vector_fma": 1, "scalar_fma": 1, "packed_any": 3}
    assert isa_counts(funcs["other"])["vector_fma"] == 1
    assert isa_counts(funcs["__tvm_ffi_k"])["vector_insns"] == 0
