"""The measured roof (issue 29): the FMA / streaming benchmark and its per-machine cache, `leka bench
roof`, the level a kernel's working set picks, a task's fraction of its roof, SOL-ExecBench's score at
its anchors, the reports' columns, and the router leaving near-roof kernels alone."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agents.common import rank_kernels
from agents.hw_sensing import HardwareSensingAgent, mark_near_roof
from candidate_tree.schema import Node, NodeStatus
from leka.core.config import load_config
from leka.core.protocols import AgentContext
from leka.core.types import EvalResult
from profilers import calibrate
from profilers import roof_bench as R
from profilers.calibrate import BandLevel, Peaks
from profilers.profile import _kernel
from profilers.report import KernelProfile, ProfileReport
from profilers.roof import sol_score, task_roof

QUICK = {"budget_s": 0.3, "max_bytes": 4 * 2**20}  # a fraction of a second: the cache is under test here


def _have_cc() -> bool:
    try:
        R.binary()
    except R.RoofBenchUnavailable:
        return False
    return True


needs_cc = pytest.mark.skipif(not _have_cc(), reason="no C compiler with OpenMP (LEKA_CC / cc)")


@needs_cc
def test_roof_is_measured_cached_per_threads_and_dtype_and_refreshed(tmp_path, monkeypatch):
    monkeypatch.setenv("LEKA_CACHE", str(tmp_path))
    first = calibrate.peaks(threads=1, **QUICK)
    assert first.source == "measured" and first.threads == 1 and first.dtype == "float32"
    assert first.gflops > 1.0 and [lv.name for lv in first.levels][-1] == "DRAM"
    assert all(lv.gbps > 0.1 for lv in first.levels) and first.gbps == first.levels[-1].gbps
    path = tmp_path / "calibration" / f"{first.cpu}.json"
    assert "-1t-float32" in first.cpu and path.is_file()
    # read back from the file, not measured: prove it by editing the file
    data = json.loads(path.read_text())
    data["gflops"] = 1234.5
    path.write_text(json.dumps(data))
    again = calibrate.peaks(threads=1, **QUICK)
    assert again.source == "cache" and again.gflops == 1234.5
    fresh = calibrate.peaks(threads=1, refresh=True, **QUICK)
    assert fresh.source == "measured" and fresh.gflops != 1234.5
    assert json.loads(path.read_text())["gflops"] == pytest.approx(fresh.gflops)
    # thread count and dtype are part of the key: each is its own measurement and file
    f64 = calibrate.peaks(threads=1, dtype="float64", **QUICK)
    assert f64.source == "measured" and f64.cpu != first.cpu and f64.cpu.endswith("-1t-float64")
    assert f64.fma["lanes"] * 2 == fresh.fma["lanes"]  # a vector holds half as many doubles
    with pytest.raises(FileNotFoundError, match="leka bench roof"):
        calibrate.peaks(threads=3, measure=False)
    assert calibrate.peaks("cuda").source == "table"  # no measured GPU roof cached here: the datasheet


@needs_cc
def test_bench_roof_command_prints_the_cached_table_and_refreshes(tmp_path, monkeypatch):
    from leka.cli import _mount, app

    monkeypatch.setenv("LEKA_CACHE", str(tmp_path))
    p = calibrate.peaks(threads=1, **QUICK)
    _mount()
    r = CliRunner().invoke(app, ["bench", "roof", "--threads", "1", "--markdown"])
    assert r.exit_code == 0, r.output
    assert "cache" in r.output.splitlines()[0] and p.cpu in r.output
    assert f"| FMA float32 | - | {p.gflops:.1f} GFLOP/s |" in r.output
    for lv in p.levels:
        assert f"| {lv.name} |" in r.output and f"{lv.gbps:.1f} GB/s" in r.output
    r = CliRunner().invoke(app, ["bench", "roof", "--threads", "1", "--json", "--refresh", "--budget", "0.3",
                                 "--max-mib", "4"])
    assert r.exit_code == 0, r.output
    again = Peaks.model_validate_json(r.output)
    assert again.source == "measured" and again.measured_at >= p.measured_at
    r = CliRunner().invoke(app, ["bench", "roof", "--dtype", "int4"])
    assert r.exit_code != 0 and "int4" in str(r.exception or r.output)


def test_cache_levels_and_plan_from_sysfs(tmp_path):
    for i, (level, kind, size, shared) in enumerate([(1, "Data", "48K", "0"), (1, "Instruction", "32K", "0"),
                                                       (2, "Unified", "2048K", "0"), (3, "Unified", "32M", "0-3")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        for name, val in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
            (d / name).write_text(f"{val}\n")
    caches = R.cache_levels(tmp_path)
    assert [(c["name"], c["bytes"], c["shared_by"]) for c in caches] == \
        [("L1", 48 * 2**10, 1), ("L2", 2 * 2**20, 1), ("L3", 32 * 2**20, 4)]
    plan = {p["name"]: p for p in R.level_plan(caches, threads=4)}
    assert list(plan) == ["L1", "L2", "LLC", "DRAM"]
    assert plan["L1"]["capacity"] == 4 * 48 * 2**10  # private: every thread brings its own
    assert plan["LLC"]["capacity"] == 32 * 2**20  # shared: once
    # triad's three arrays fill half a private cache per thread, half the shared one over all threads
    assert plan["L2"]["elems_per_thread"] * 4 * 3 <= 2**20
    assert plan["LLC"]["elems_per_thread"] * 4 * 3 * 4 <= 16 * 2**20
    assert plan["DRAM"]["elems_per_thread"] * 4 * 3 * 4 >= 64 * 2**20  # past the last-level cache


PK = Peaks(gflops=100.0, gbps=10.0, source="measured", cpu="test", threads=2,
           levels=[BandLevel(name="L1", capacity=64 * 2**10, read_gbps=400.0, copy_gbps=300.0),
                   BandLevel(name="L2", capacity=2 * 2**20, triad_gbps=100.0),
                   BandLevel(name="DRAM", read_gbps=10.0, copy_gbps=8.0)])


def test_a_kernel_takes_the_bandwidth_of_the_level_its_working_set_fits_in():
    assert PK.level_for(32 * 2**10) == ("L1", 400.0)  # the best of the level's kernels
    assert PK.level_for(2**20) == ("L2", 100.0)
    assert PK.level_for(64 * 2**20) == ("DRAM", 10.0)
    # a 1 MiB elementwise kernel (flops << bytes): memory-bound at L2's 100 GB/s
    k = _kernel("add", seconds=4e-5, calls=2, denom=1e-4, info={"flops": 2**18, "bytes": 2**20, "kind": "injective"},
                pk=PK, isa=None, scheduled=False)
    assert (k.level, k.bound) == ("L2", "memory")
    assert k.roof_s == pytest.approx(2**20 / 100e9)
    assert k.roof_fraction == pytest.approx(k.roof_s / 2e-5)
    # a GEMM whose FLOPs take longer at the FMA peak than its bytes at DRAM: compute-bound
    g = _kernel("mm", seconds=0.1, calls=1, denom=0.1, info={"flops": 2e9, "bytes": 64 * 2**20, "kind": "matmul"},
                pk=PK, isa=None, scheduled=False)
    assert (g.level, g.bound) == ("DRAM", "compute") and g.roof_s == pytest.approx(2e9 / 100e9)
    assert g.roof_fraction == pytest.approx(0.2)


def _kp(name: str, share: float, frac: float, seconds: float = 1e-3, **kw) -> KernelProfile:
    base = {"calls": 1, "flops": 1e6, "bytes": 4096, "gflops": 1.0, "gbps": 1.0, "intensity": 1.0,
            "roof_gflops": 1.0, "bound": "memory", "kind": "matmul", "roof_s": frac * seconds}
    return KernelProfile(name=name, seconds=seconds, share=share, roof_fraction=frac, **{**base, **kw})


def test_task_fraction_of_roof_on_a_synthetic_profile():
    ks = [_kernel("mm", 6e-3, 2, 1e-2, {"flops": 1e8, "bytes": 4 * 2**20, "kind": "matmul"}, PK, None, False),
          _kernel("relu", 2e-3, 1, 1e-2, {"flops": 2**20, "bytes": 2**22 * 3, "kind": "injective"}, PK, None, False)]
    rep = ProfileReport(kernels=ks, total_s=1e-2, peaks=PK)
    expect = 2 * max(1e8 / 100e9, 4 * 2**20 / 10e9) + max(2**20 / 100e9, 3 * 2**22 / 10e9)
    assert rep.roof_s == pytest.approx(expect)
    tr = task_roof(rep)  # against the profile's own iteration time
    assert tr.roof_s == pytest.approx(expect) and tr.fraction == pytest.approx(expect / 1e-2)
    assert tr.flops == pytest.approx(2 * 1e8 + 2**20) and tr.bytes == 2 * 4 * 2**20 + 3 * 2**22
    assert tr.bound == "memory"  # both kernels' bytes at DRAM outweigh their FLOPs at the peak
    judged = task_roof(rep.model_dump(mode="json"), measured_s=4e-3, baseline_s=8e-3)  # as stored in a tree
    assert judged.fraction == pytest.approx(expect / 4e-3)
    assert judged.sol == pytest.approx(sol_score(4e-3, 8e-3, expect))
    assert task_roof(None) is None and task_roof({"error": "x"}) is None and task_roof(ProfileReport()) is None


def test_a_rewrite_that_adds_operations_raises_no_roof():
    # fast_math's gelu_tanh_fast counts 38 operations an element where the root's tanh counted 8: credited
    # as work they made a compute-bound answer read over 100% of its roof
    n = 131072
    k = _kernel("gelu_tanh_fast", 2e-4, 1, 2e-4, {"flops": 38.0 * n, "bytes": 8 * n, "kind": "injective"},
                PK, None, False)
    rep = ProfileReport(kernels=[k], total_s=2e-4, peaks=PK)
    own = task_roof(rep, measured_s=2e-5)
    fair = task_roof(rep, measured_s=2e-5, task_flops=8.0 * n)
    assert own.bound == "compute" and own.fraction > 1.0  # 38n at the FMA peak is slower than the answer
    assert fair.flops == pytest.approx(8.0 * n)
    assert fair.roof_s == pytest.approx(max(8.0 * n / 100e9, 8 * n / PK.level_for(8 * n)[1] / 1e9))
    assert fair.fraction < own.fraction and fair.fraction <= 1.0
    # fewer FLOPs than the root (work removed) keep the candidate's own count
    assert task_roof(rep, measured_s=2e-5, task_flops=100.0 * n).roof_s == pytest.approx(own.roof_s)


def test_sol_score_anchors():
    assert sol_score(1.0, 4.0, 1.0) == 1.0  # at the roof
    assert sol_score(4.0, 4.0, 1.0) == pytest.approx(0.5)  # at the baseline
    assert 0.5 < sol_score(2.0, 4.0, 1.0) < 1.0  # closed part of the gap
    assert sol_score(2.0, 4.0, 1.0) == pytest.approx(1 / (1 + 1 / 3))
    slower = sol_score(8.0, 4.0, 1.0)
    assert 0.0 < slower < 0.5 and sol_score(80.0, 4.0, 1.0) < slower  # slower: below 0.5, towards 0
    assert sol_score(0.5, 4.0, 1.0) == 1.0  # under the roof: clipped, never above 1
    assert sol_score(2.0, 1.0, 1.0) is None and sol_score(2.0, 0.5, 1.0) is None  # no gap to close
    assert sol_score(0.0, 4.0, 1.0) is None and sol_score(1.0, 4.0, 0.0) is None


def test_run_report_shows_fraction_of_roof_and_sol_score():
    from leka.report import render_report, roof_summary, summary_table

    prof = ProfileReport(kernels=[_kp("mm", 0.9, 0.5, seconds=2e-3, roof_s=1e-3)], total_s=2e-3, peaks=PK)
    res = EvalResult(task="t", backend="llvm", compiled=True, correct=True, speedup=2.0, t_candidate_s=2e-3,
                     t_baseline_s=4e-3)
    node = Node(id=3, candidate_hash="h", status=NodeStatus.MEASURED, result=res, profile=prof.model_dump(mode="json"),
                created=0.0, updated=0.0)
    roof = roof_summary(node)
    assert roof["best_roof_fraction"] == pytest.approx(0.5) and roof["best_sol_score"] == pytest.approx(0.75)
    summary = {"task": "t", "backend": "llvm", "best_node": 3, "best_speedup": 2.0, "best_speedup_lo": 1.9,
               "best_speedup_hi": 2.1, "best_faster": True, "baseline": "untuned TVM", "best_correct": True,
               "nodes_total": 1, "nodes_by_level": {"L0": 0}, "nodes_by_status": {}, "budget_used_s": 1.0,
               "budget_s": 60.0, "evaluations": 1, "stop_reason": "", "policy": "rules", "routing": "profile",
               "layers": ["L0"], "seed": 0, **roof}

    class NoNodes:
        def nodes(self):
            return []

    text = render_report(summary, NoNodes(), None, None, None)
    line = next(ln for ln in text.splitlines() if ln.startswith("- roof:"))
    assert "at 50% of the measured roof" in line and "SOL score 0.75" in line and "0.5 at untuned TVM" in line
    from rich.console import Console

    con = Console(record=True, width=200)
    con.print(summary_table(summary))
    assert any("fraction of roof / SOL score" in ln and "50% / 0.75" in ln for ln in con.export_text().splitlines())
    assert roof_summary(node.model_copy(update={"profile": None})) == {}


def test_grid_report_shows_fraction_of_roof_and_sol_columns(tmp_path):
    from leka.exp.report import Data, html_report, markdown

    cfg = {"name": "g", "arms": [{"name": "leka"}], "baseline": {"tuned_trials": 0}}
    rows = [{"job_id": f"j{i}", "backend": "llvm", "level": 1, "arm": "leka", "task_label": f"t{i}", "seed": 0,
             "correct": True, "compiled": True, "speedup_ref": 2.0, "timing_valid_ref": True, "speedup_ref_lo": 1.9,
             "speedup_ref_hi": 2.1, "roof_fraction": f, "sol_ref": s} for i, (f, s) in enumerate([(0.2, 0.6), (0.4, 0.8)])]
    d = Data.from_rows(tmp_path, rows, cfg)
    md = markdown(d)
    assert "fraction of roof (median)" in md and "SOL score vs the reference (median)" in md
    t1 = next(ln for ln in md.splitlines() if ln.startswith("| 1 | leka |"))
    assert "| 30% | 0.70 |" in t1  # medians of the two jobs
    job = next(ln for ln in md.splitlines() if ln.startswith("| j1 |"))
    assert "| 40% | 0.80 |" in job
    page = html_report(d)
    assert ">30%</a>" in page and ">0.70</a>" in page and "0.5 at the reference" in page


def test_router_skips_the_near_roof_kernel_and_routes_to_the_gappy_one():
    # the hottest kernel is at 90% of its roof; the next one, scheduled and scalar, at 10%
    hot = _kp("fused_conv_at_roof", share=0.6, frac=0.9, kind="conv", scheduled=True, vector_fma=40,
              vector_insns=60, bound="compute")
    gappy = _kp("matmul_gappy", share=0.3, frac=0.1, kind="matmul", scheduled=True, vector_fma=0,
                vector_insns=0, scalar_fma=12)
    rep = ProfileReport(kernels=[hot, gappy], total_s=1e-3, kernel_count=2)
    marked = mark_near_roof(rep, 0.85)
    assert [k.at_roof for k in marked.kernels] == [True, False] and not any(k.at_roof for k in rep.kernels)
    route = HardwareSensingAgent("profile", layers="L1,L2").decide(None, rep, AgentContext("t", "llvm", ""))
    # L2's evidence is the gappy kernel's scalar code, weighted by its share x gap
    assert route.level == "L2" and "matmul_gappy" in route.reason and "scheduled but scalar" in route.reason
    assert "left alone: fused_conv_at_roof at 90%" in route.reason
    assert route.scores["L2"] == pytest.approx(0.3 * 0.9)
    # with the threshold at 1.0 nothing is at its roof: the hot kernel's evidence speaks again
    loose = HardwareSensingAgent("profile", layers="L1,L2", near_roof=1.0).decide(None, rep, AgentContext("t", "llvm", ""))
    assert "fused_conv_at_roof" in loose.reason and "left alone" not in loose.reason
    # the agents' ranking: share x gap, and the near-roof kernel has no place in it
    funcs = {"fused_conv_at_roof": None, "matmul_gappy": None}
    prof = rep.model_dump(mode="json")
    assert [n for n, _ in rank_kernels(funcs, prof)] == ["matmul_gappy"]
    assert [n for n, _ in rank_kernels(funcs, prof, near_roof=1.0)] == ["matmul_gappy", "fused_conv_at_roof"]
    far = _kp("far", 0.3, 0.1, kind="matmul")
    near = _kp("near", 0.6, 0.8, kind="matmul")
    ranked = rank_kernels({"far": None, "near": None}, ProfileReport(kernels=[near, far]).model_dump(mode="json"))
    assert [n for n, _ in ranked] == ["far", "near"]  # 0.3 x 0.9 > 0.6 x 0.2: the gap outweighs the share
    with pytest.raises(ValueError, match="near_roof"):
        HardwareSensingAgent("profile", near_roof=0.0)
    assert load_config([], ["router.near_roof=0.9"]).router.near_roof == 0.9
    with pytest.raises(Exception, match="near_roof"):
        load_config([], ["router.near_roof=1.5"])


@pytest.mark.gpu
def test_gpu_roof_is_measured_with_device_kernels_and_preferred_to_the_datasheet(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    monkeypatch.setenv("LEKA_CACHE", str(tmp_path))
    assert calibrate.peaks("cuda").source == "table"
    p = calibrate.refresh_gpu("cuda")
    assert p.device == "gpu" and p.source == "measured" and p.gflops > 100 and p.levels[-1].name == "DRAM"
    again = calibrate.peaks("cuda")
    assert again.source == "cache" and again.gflops == pytest.approx(p.gflops) and again.gbps == pytest.approx(p.gbps)


def test_the_run_report_says_why_each_kernel_got_what_it_got(tmp_path):
    """Issue 44, item 4: per kernel of the root's profile, its share, roof fraction and score (share x
    distance to roof), the evaluations spent on it and why: a kernel at router.near_roof is left alone,
    the gappy ones are ranked, and an edit that never got evaluated (it did not apply) costs nothing."""
    from candidate_tree import Tree
    from leka.core.types import Edit
    from leka.report import kernel_budget, render_report

    prof = ProfileReport(kernels=[_kp("conv", 0.6, 0.10), _kp("relu", 0.3, 0.90), _kp("add", 0.1, 0.20)],
                         total_s=1e-3, peaks=PK).model_dump(mode="json")
    ok = EvalResult(task="t", backend="llvm", compiled=True, correct=True, speedup=1.0, timing_valid=True)
    tree = Tree(tmp_path)
    root = tree.add_node(None, None, None, "r", result=ok, profile=prof, meta={"cost_s": 10.0})
    trace = {"trace": [{"prim": "get_sblock", "args": ["x"], "out": ["b"]}]}
    tree.add_node(root, "L1", Edit(level="L1", kind="trace", target="conv", payload=trace), "a",
                  result=ok.model_copy(update={"speedup": 2.0}), profile=prof, meta={"cost_s": 4.0})
    tree.add_node(root, "L1", Edit(level="L1", kind="traces", target="conv", payload={"traces": {"conv": [], "add": []}}),
                  "b", result=ok.model_copy(update={"speedup": 1.5}), meta={"cost_s": 5.0})
    tree.add_node(root, "L1", Edit(level="L1", kind="trace", target="add", payload={"trace": []}), "illegal:c",
                  result=EvalResult(task="t", error_kind="compile", error="no"), status=NodeStatus.FAILED)
    rows = {r["kernel"]: r for r in kernel_budget(tree.nodes(), 0.85)}
    assert rows["relu"]["evaluations"] == 0 and rows["relu"]["why"].startswith("left alone: at 90% of its roof")
    assert rows["conv"]["evaluations"] == 2 and rows["conv"]["eval_s"] == 9.0 and "ranked #1" in rows["conv"]["why"]
    assert rows["conv"]["score"] == pytest.approx(0.6 * 0.9)
    assert rows["add"]["evaluations"] == 1 and "ranked #2" in rows["add"]["why"]  # the illegal edit: not counted
    summary = {"task": "t", "backend": "llvm", "best_node": None, "best_speedup": None, "baseline": "untuned TVM",
               "best_correct": False, "nodes_total": 4, "nodes_by_level": {"L0": 0}, "nodes_by_status": {},
               "budget_used_s": 1.0, "budget_s": 60.0, "evaluations": 3, "stop_reason": "", "policy": "rules",
               "routing": "profile", "layers": ["L1"], "seed": 0, "kernel_budget": list(rows.values())}
    from leka.loop.context import edit_summary

    text = render_report(summary, tree, None, edit_summary, None)
    assert "## Budget by kernel" in text
    assert any(ln.startswith("| relu | 30.0% | 90.0% |") and "left alone" in ln for ln in text.splitlines())
    tree.close()


def test_the_kernel_budget_names_kernels_a_graph_edit_made(tmp_path):
    """A kernel that only exists after an L0 edit (fast_math's gelu_tanh_fast) is listed after the root's,
    with the node whose graph made it and the evaluations spent on it."""
    from candidate_tree import Tree
    from leka.core.types import Edit
    from leka.report import kernel_budget

    ok = EvalResult(task="t", backend="llvm", compiled=True, correct=True, speedup=1.0, timing_valid=True)
    tree = Tree(tmp_path)
    root = tree.add_node(None, None, None, "r", result=ok, meta={"cost_s": 3.0},
                         profile=ProfileReport(kernels=[_kp("gelu", 1.0, 0.01)], total_s=1e-3, peaks=PK).model_dump(mode="json"))
    fast = tree.add_node(root, "L0", Edit(level="L0", kind="pass", payload={"name": "fast_math"}), "f", result=ok,
                         meta={"cost_s": 3.0},
                         profile=ProfileReport(kernels=[_kp("gelu_fast", 1.0, 0.2)], total_s=1e-3, peaks=PK).model_dump(mode="json"))
    tree.add_node(fast, "L1", Edit(level="L1", kind="trace", target="gelu_fast", payload={"trace": []}), "t", result=ok,
                  meta={"cost_s": 2.0})
    rows = kernel_budget(tree.nodes(), 0.85)
    assert [r["kernel"] for r in rows] == ["gelu", "gelu_fast"]
    assert rows[1]["evaluations"] == 1 and f"node #{fast}'s graph" in rows[1]["why"] and rows[1]["roof_fraction"] == 0.2
    tree.close()
