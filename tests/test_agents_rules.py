"""Rule agents on the two embedded examples: every proposed edit is legal and correct, and the
agents are deterministic. Timing comparisons live in experiments/rules_demo.py, not here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.common import analyse, rank_kernels, validate_trace
from agents.l0_relax import RuleL0Agent, rank_passes
from agents.l1_tir import RuleL1Agent
from agents.l2_source import RuleL2Agent, check_against_tir, gemm_shape
from agents.rules import make_rule_agents
from benchmark.task import load_task_file
from leka import ir
from leka import tvm_adapter as A
from leka.core.protocols import AgentContext
from leka.core.types import edit_digest
from leka.ir import sched
from leka.ir.edits import apply_edit

EX = Path(__file__).resolve().parents[1] / "benchmark" / "examples"


@pytest.fixture(scope="module", params=["mbv2_block", "llama_block"])
def example(request):
    task = load_task_file(EX / f"{request.param}.py")
    root = ir.import_root(task)
    cand = ir.root_candidate(task, root=root)
    target = A.cpu_target()
    funcs = A.prim_funcs(A.lower(ir.relax_module(cand, root.params), target))
    return request.param, task, root, cand, target, funcs


# this machine's fp32 lanes, as a run's context has them (a C++ L2 kernel of 16 lanes needs AVX-512,
# which not every x86 machine has)
LANES = A.vector_lanes_fp32(A.cpu_target())


def ctx(task, level: str, **kw) -> AgentContext:
    return AgentContext(task_id=task.id, backend="llvm", level=level, vector_lanes=LANES, num_cores=2, **kw)


def _random_args(func, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _, shape, dt in A.buffer_signature(func):
        a = np.asarray(rng.standard_normal(shape))
        out.append((a > 0) if dt == "bool" else a.astype(dt))
    return out


def test_analysis_kinds(example):
    name, _, _, _, _, funcs = example
    kinds = {n: analyse(f, n).kind for n, f in funcs.items()}
    if name == "mbv2_block":
        assert kinds["conv2d"] == "conv" and kinds["conv2d2"] == "conv"
        assert kinds["conv2d1"] == "depthwise_conv"
    else:
        assert kinds["matmul"] == "matmul" and kinds["matmul1"] == "batch_matmul"
        assert kinds["fused_softmax_broadcast_to"] == "reduction"
    ranked = rank_kernels(funcs)
    assert kinds[ranked[0][0]] in ("conv", "matmul")  # the FLOP estimate puts a GEMM-like kernel first


def test_l1_traces_apply_and_are_correct(example):
    name, task, root, cand, target, funcs = example
    agent = RuleL1Agent(root_params=root.params, max_kernels=2)
    edits = agent.propose(cand, ctx(task, "L1", variants=2))
    assert len(edits) >= 2
    assert {e.target for e in edits} <= set(funcs)
    for e in edits:
        f = funcs[e.target]
        g = sched.apply_trace(f, e.payload["trace"])
        assert not A.structural_equal(f, g), "a trace must change the kernel"
        args = _random_args(f)
        ref, _ = A.run_prim_func(A.build_prim_func(f, target), args)
        got, _ = A.run_prim_func(A.build_prim_func(g, target), args)
        np.testing.assert_allclose(got[-1], ref[-1], rtol=1e-4, atol=1e-4)
    # scheduled through the candidate layer too: the module still computes the task's output
    e = edits[0]
    key = A.structural_hash(funcs[e.target])
    c2 = cand.model_copy(update={"l1": {key: ir.L1Entry(func=e.target, trace=e.payload["trace"])}})
    built = ir.build_candidate(c2, target, root.params)
    assert key in built.applied_l1
    x = [t.numpy() for t in task.make_inputs(0)]
    out = A.VMRunner(built.executable, A.device_for("llvm"))(*x)[0]
    ref_out = ir.build_candidate(cand, target, root.params)
    want = A.VMRunner(ref_out.executable, A.device_for("llvm"))(*x)[0]
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_l1_batch_schedules_the_hottest_kernels_in_one_edit(example, tmp_path):
    """Level 3 (issue 19): one edit, first in the list, schedules every distinct unscheduled kernel with
    its first-choice variant; applied, the candidate computes the root's output. Off (l1_batch 0),
    or once tried, there is none."""
    _, task, root, cand, target, funcs = example
    agent = RuleL1Agent(root_params=root.params)
    edits = agent.propose(cand, ctx(task, "L1", extra={"l1_batch": 16}))
    batch = edits[0]
    assert batch.kind == "traces" and len(batch.payload["traces"]) >= 4, batch
    keys = {A.structural_hash(funcs[n]) for n in batch.payload["traces"]}
    assert len(keys) == len(batch.payload["traces"])  # identical kernels share one L1 entry
    for n, steps in batch.payload["traces"].items():  # the first variant that compiles, of the first two
        assert steps in [v for _, v in agent.variants_for(funcs[n], n, LANES)[:2]]
    out = apply_edit(cand, batch, workdir=tmp_path, root_params=root.params, build_check=False)
    assert out.ok, out.error
    assert set(out.candidate.l1) == keys
    built = ir.build_candidate(out.candidate, target, root.params)
    assert set(built.applied_l1) >= keys
    x = [t.numpy() for t in task.make_inputs(0)]
    got = A.VMRunner(built.executable, A.device_for("llvm"))(*x)[0]
    ref = ir.build_candidate(cand, target, root.params)
    want = A.VMRunner(ref.executable, A.device_for("llvm"))(*x)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # off (no l1_batch), and once tried: no batch
    assert all(e.kind == "trace" for e in agent.propose(cand, ctx(task, "L1")))
    again = agent.propose(cand, ctx(task, "L1", extra={"l1_batch": 16}, tried={edit_digest(batch)}))
    assert all(e.kind == "trace" for e in again)
    bad = batch.model_copy(update={"payload": {"traces": {**batch.payload["traces"], "no_such_kernel": [{"prim": "x"}]}}})
    err = apply_edit(cand, bad, workdir=tmp_path, root_params=root.params, build_check=False)
    assert not err.ok and "no_such_kernel" in err.error, err.error


def test_l1_every_kernel_gets_a_legal_trace(example):
    _, _, root, _, _, funcs = example
    agent = RuleL1Agent(root_params=root.params)
    for n, f in funcs.items():
        vs = agent.variants_for(f, n, LANES)
        assert vs, f"no legal trace for {n}"
        for _, steps in vs:
            sched.apply_trace(f, steps)  # raises TraceError if a proposed trace were illegal


def test_l1_respects_tried_and_is_deterministic(example):
    _, task, root, cand, _, _ = example
    agent = RuleL1Agent(root_params=root.params)
    a = agent.propose(cand, ctx(task, "L1"))
    b = agent.propose(cand, ctx(task, "L1"))
    assert [x.model_dump() for x in a] == [x.model_dump() for x in b]
    tried = {edit_digest(a[0])}
    c = agent.propose(cand, ctx(task, "L1", tried=tried))
    assert edit_digest(a[0]) not in {edit_digest(x) for x in c}


def test_l0_ranking_and_tried(example):
    name, task, root, cand, _, _ = example
    agent = RuleL0Agent(root_params=root.params)
    edits = agent.propose(cand, ctx(task, "L0", variants=8))
    names = [e.payload["name"] for e in edits]
    if name == "mbv2_block":
        assert names[0] == "fold_batchnorm"
        assert names.index("clip_to_relu_min") < names.index("convert_layout_nhwc")
    else:
        assert "fold_batchnorm" not in names and "convert_layout_nhwc" not in names
    assert all(e.level == "L0" and e.kind == "pass" for e in edits)
    again = agent.propose(cand, ctx(task, "L0", variants=8, tried={edit_digest(edits[0])}))
    assert edits[0].payload["name"] not in [e.payload["name"] for e in again]
    # each proposed pass really changes the module (the agent checked it; check one here as well)
    mod = ir.relax_module(cand, root.params)
    fn = A.L0_PASS_FNS[names[0]]
    assert not A.structural_equal(fn(mod, A.cpu_target()), mod)


def test_l0_rank_passes_text_rules():
    text = ('lv: R.Tensor((1, 8, 4, 4), dtype="float32") = R.nn.conv2d(x, c0, strides=[1, 1], '
            'groups=1, data_layout="NHWC", kernel_layout="OHWI")\n'
            'def main(x: R.Tensor((1, 4, 4, 3), dtype="float32"), c0: R.Tensor((8, 1, 1, 3), dtype="float32")):')
    names = [n for n, _ in rank_passes(text)]
    assert "conv1x1_to_matmul" in names and "convert_layout_nhwc" not in names


def test_l0_rank_passes_prefers_hwio_for_a_dense_kxk_conv():
    sig = 'def main(x: R.Tensor((1, 32, 80, 80), dtype="float32"), c0: R.Tensor(({w}), dtype="float32")):\n'
    dense = sig.format(w="64, 32, 3, 3") + ('lv: R.Tensor((1, 64, 40, 40), dtype="float32") = R.nn.conv2d(x, c0, '
                                            'strides=[2, 2], groups=1, data_layout="NCHW", kernel_layout="OIHW")')
    names = [n for n, _ in rank_passes(dense)]
    assert names.index("convert_layout_nhwc_hwio") < names.index("convert_layout_nhwc")
    # depthwise only (groups = C): the OHWI move stays first, as before
    dw = sig.format(w="32, 1, 3, 3") + ('lv: R.Tensor((1, 32, 80, 80), dtype="float32") = R.nn.conv2d(x, c0, '
                                        'strides=[1, 1], groups=32, data_layout="NCHW", kernel_layout="OIHW")')
    names = [n for n, _ in rank_passes(dw)]
    assert "convert_layout_nhwc" in names and "convert_layout_nhwc_hwio" not in names


@pytest.mark.parametrize("layout", [[], ["convert_layout_nhwc_hwio"]])
def test_l1_conv_traces_build_with_a_silu_epilogue(tmp_path, layout):
    """conv + BN + SiLU fused: the epilogue reads conv+bias twice (x * sigmoid(x)). Reverse-inlining
    that intermediate into the write-back made TIR that does not build ("Buffer T_add_intermediate is
    used before its definition"), for every conv tile, so L1 could not schedule the hot kernel of
    l2_conv3x3_s2_bn_silu at all. Now every variant builds and computes the kernel."""
    from benchmark.roots import load_root
    from benchmark.task import resolve
    from leka.core.types import Edit
    from leka.ir.edits import apply_edit

    task = resolve("l2_conv3x3_s2_bn_silu")
    root = load_root(task)
    c = ir.root_candidate(task, "llvm", root)
    for p in ["fold_batchnorm", *layout]:
        out = apply_edit(c, Edit(level="L0", kind="pass", payload={"name": p}), workdir=tmp_path,
                         root_params=root.params, build_check=False)
        assert out.error is None, out.error
        c = out.candidate
    target = A.cpu_target()
    funcs = A.prim_funcs(A.lower(ir.relax_module(c, root.params), target))
    name = next(n for n in funcs if "conv2d" in n and "sigmoid" in n)
    variants = RuleL1Agent(root_params=root.params).variants_for(funcs[name], name, 16)
    assert len(variants) >= 3
    args = _random_args(funcs[name])
    want = A.run_prim_func(A.build_prim_func(funcs[name], target), args)[0][-1]
    for why, steps in variants:
        built = A.build_prim_func(sched.apply_trace(funcs[name], steps), target)
        got = A.run_prim_func(built, args)[0][-1]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=why)


def test_l2_cpp_matches_primfunc(example):
    name, task, root, cand, target, funcs = example
    agent = RuleL2Agent(root_params=root.params, verify=False)
    edits = agent.propose(cand, ctx(task, "L2", variants=2))
    assert edits, "both examples have a GEMM-like kernel (matmul / 1x1 conv)"
    for e in edits:
        assert e.payload["language"] == "cpp" and f'int32_t {e.payload["entry"]}(' in e.payload["text"]
        err = check_against_tir(funcs[e.target], e.payload["text"], e.payload["entry"], target, seed=3)
        assert err < 1e-3
    if name == "llama_block":
        g = gemm_shape(funcs["matmul1"])
        assert g is not None and (g.batch, g.m, g.n, g.k) == (4, 64, 64, 64)


def test_make_rule_agents():
    agents = make_rule_agents("llvm")
    assert set(agents) == {"L0", "L1", "L2"}
    assert all(a.level == lvl for lvl, a in agents.items())


def test_a_widened_round_reschedules_scheduled_kernels_with_untried_tiles(example):
    # issue 30, no idle budget: once the hottest kernels are scheduled the agent has nothing left; in a
    # widened round it offers the kernels already scheduled their other variants and, for GEMM-like
    # ones, the wider register-tile grid, each legal and never one already tried
    name, task, root, cand, target, funcs = example
    agent = RuleL1Agent(root_params=root.params, max_kernels=64)
    c = cand
    tried: set[str] = set()
    for _ in range(40):  # schedule every kernel with its first choice, as a run's first pass does
        first = [e for e in agent.propose(c, ctx(task, "L1", tried=tried, extra={"l1_batch": 0})) if e.kind == "trace"]
        if not first:
            break
        tried.add(edit_digest(first[0]))
        out = apply_edit(c, first[0], workdir=Path("/tmp"), root_params=root.params, build_check=False)
        c = out.candidate if out.ok else c  # an edit that does not apply is a failed node in a run
    assert agent.propose(c, ctx(task, "L1", tried=tried, extra={"l1_batch": 0})) == []  # exhausted
    wide = agent.propose(c, ctx(task, "L1", tried=tried, extra={"l1_batch": 0, "widen": 1}))
    assert wide and not {edit_digest(e) for e in wide} & tried
    keys = {n: A.structural_hash(f) for n, f in funcs.items()}
    assert all(keys[e.target] in c.l1 for e in wide)  # kernels already scheduled, scheduled again
    for e in wide:
        assert validate_trace(funcs[e.target], e.payload["trace"]) is None
    gemm = [n for n, f in funcs.items() if analyse(f, n).kind in ("matmul", "batch_matmul", "conv", "depthwise_conv")]
    if gemm:  # the widened grid exists only for GEMM-like kernels
        wider = agent.variants_for(funcs[gemm[0]], gemm[0], LANES, wide=True)
        assert len(wider) > len(agent.variants_for(funcs[gemm[0]], gemm[0], LANES))
        assert any("(widened)" in why for why, _ in wider)
