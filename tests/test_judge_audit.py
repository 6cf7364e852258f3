"""Issue 43, the judge audited: no time under the physical floor (benchmark/judge/floor.py), the platform in
every timing (benchmark/judge/machine_state.py), outliers marked for audit (benchmark/judge/audit.py), and the
reports that show them. No kernel is timed: the floor test hands the judge's own step a real task's
prepared state, a real measured roof and a fake measured time."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from benchmark import baselines
from benchmark.judge import audit, floor, machine_state
from benchmark.judge import job as steps
from benchmark.task import resolve
from leka.core.config import EvaluatorConfig
from leka.core.types import EvalResult
from profilers import calibrate

QUICK = {"budget_s": 0.3, "max_bytes": 4 * 2**20}  # a real roof, measured in a fraction of a second


def _have_cc() -> bool:
    from profilers import roof_bench as R

    try:
        R.binary()
    except R.RoofBenchUnavailable:
        return False
    return True


def _prepared(task_id: str, tmp_path) -> steps.JobState:
    """The judge's state after its own `prepare` step (task, root, footprint, target), as the
    evaluation child has it when the timing ends."""
    t = resolve(task_id)
    cfg = EvaluatorConfig().model_dump(mode="json")
    job = {"task_path": str(t.path), "task_id": t.id, "backend": "llvm", "candidate": None, "evaluator": cfg,
           "baseline": None, "time": False, "cache_dir": str(tmp_path / "cache"), "threads": 1}
    st = steps.JobState(job=job, cfg=cfg, backend="llvm", res=EvalResult(task=t.id, baseline="tuned"))
    assert steps.prepare(st)
    return st


def _timed(st: steps.JobState, t_candidate_s: float, speedup: float = 3.0) -> None:
    """What `timing.record` leaves in a correct, validly timed result; only the times are made up."""
    r = st.res
    r.compiled = r.correct = r.timing_valid = True
    r.speedup, r.speedup_lo, r.speedup_hi = speedup, speedup * 0.95, speedup * 1.05
    r.t_candidate_s, r.t_baseline_s, r.n_pairs = t_candidate_s, t_candidate_s * speedup, 5


@pytest.mark.skipif(not _have_cc(), reason="no C compiler with OpenMP: no measured roof")
def test_a_time_under_the_physical_floor_is_not_a_speedup(tmp_path, monkeypatch):
    monkeypatch.setenv("LEKA_CACHE", str(tmp_path))
    pk = calibrate.peaks(threads=1, **QUICK)  # the roof `leka bench roof` caches, at the job's threads
    assert pk.source == "measured"
    st = _prepared("l1_addmm", tmp_path)
    work = floor.root_work(st.task, st.root, st.backend, st.target, st.footprint)
    # TVM's count of the task's matmul + add and its parameters, inputs and outputs
    assert work.flops > 1e6 and work.bytes == st.footprint.params + st.footprint.inputs + st.footprint.outputs
    sol = floor.task_floor(work, pk).sol_s
    assert sol > 0
    # the real evaluator path runs this step after the timing, whatever path timed
    assert floor.physical_floor in steps.STEPS
    assert steps.STEPS.index(floor.physical_floor) == steps.STEPS.index(steps.time_step) + 1

    _timed(st, t_candidate_s=0.1 * sol)  # ten times faster than the machine can compute the task
    assert floor.physical_floor(st)
    res = st.res
    assert res.error_kind == "below_physical_floor" and not res.timing_valid
    assert not res.measured and not res.is_faster(1.0)  # counted nowhere as a speedup
    assert f"{0.1 * sol * 1e6:.3f} us" in res.error and f"{sol * 1e6:.3f} us" in res.error
    assert res.extra["floor"]["sol_s"] == pytest.approx(sol) and res.extra["floor"]["slack"] == 0.5

    st2 = _prepared("l1_addmm", tmp_path)
    _timed(st2, t_candidate_s=2 * sol)  # at half the roof: an honest speed
    floor.physical_floor(st2)
    assert st2.res.error_kind is None and st2.res.is_faster(1.0)
    assert st2.res.extra["floor"]["fraction"] == pytest.approx(0.5)

    st3 = _prepared("l1_addmm", tmp_path)
    st3.cfg["floor_slack"] = 0.0  # off: recorded, never failed
    _timed(st3, t_candidate_s=0.01 * sol)
    floor.physical_floor(st3)
    assert st3.res.error_kind is None and "floor" in st3.res.extra


def test_without_a_measured_roof_the_floor_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("LEKA_CACHE", str(tmp_path))  # an empty cache: the judge never measures a roof
    st = _prepared("l1_add_residual", tmp_path)
    _timed(st, t_candidate_s=1e-12)
    assert floor.physical_floor(st)
    assert st.res.error_kind is None and "leka bench roof" in st.res.extra["floor"]["unavailable"]


def test_platform_reader_on_this_machine():
    snap = machine_state.snapshot(gpu=True)
    assert snap["cores"] and all(isinstance(c, int) for c in snap["cores"])
    assert snap["governor"] is None or all(isinstance(g, str) for g in snap["governor"].values())
    assert snap["turbo"] in (True, False, None)
    assert snap["smt"]["active"] in (True, False, None)
    assert snap["mhz"] is None or all(isinstance(f, float) and f > 0 for f in snap["mhz"].values())
    gpu = snap["gpu"]
    assert gpu == "unavailable" if shutil.which("nvidia-smi") is None else isinstance(gpu, (list, str))
    rec = machine_state.around(snap, machine_state.snapshot(), {"steal_s": 0.0, "wall_s": 1.0})
    assert rec is not None and "moved" in rec and "mhz_after" in rec and rec["steal_s"] == 0.0
    assert "governor" in machine_state.line(rec)


def test_platform_moved_names_its_reasons():
    a = {"governor": {0: "performance"}, "turbo": True, "mhz": {0: 3000.0}}
    b = {"governor": {0: "powersave"}, "turbo": True, "mhz": {0: 2000.0}}
    why = machine_state.moved(a, b, {"steal_s": 0.5, "wall_s": 1.0})
    assert "governor" in why and "3000 -> 2000 MHz" in why and "steal 50%" in why
    assert machine_state.moved(a, a, {"steal_s": 0.0, "wall_s": 1.0}) is None


def test_platform_reader_never_raises_where_sources_are_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(machine_state, "CPU", tmp_path / "no-sys")
    monkeypatch.setattr(machine_state, "CPUINFO", tmp_path / "no-cpuinfo")
    monkeypatch.setattr(shutil, "which", lambda _: None)
    snap = machine_state.snapshot(gpu=True)
    assert snap["governor"] is None and snap["turbo"] is None and snap["mhz"] is None
    assert snap["smt"] == {"active": None, "siblings": None} and snap["gpu"] == "unavailable"
    assert "unavailable" in machine_state.line(machine_state.around(snap, snap, None))


def test_gpu_clocks_read_what_nvidia_smi_answers(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda _: "/usr/bin/nvidia-smi")
    out = "NVIDIA H100 80GB HBM3, 1980, 2619, 1980, 1755, 0x0000000000000002\n"
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, out, ""))
    (g,) = machine_state.gpu_clocks()
    assert g["sm_mhz"] == 1980.0 and g["max_sm_mhz"] == 1980.0 and g["locked"] is True
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 6, "", "bad field"))
    assert machine_state.gpu_clocks() == "unavailable"


def test_degenerate_reference_detector():
    rng = np.random.default_rng(0)
    assert audit.degenerate([np.zeros((4, 8), np.float32)]) == "output 0 all zero"
    assert "near constant" in audit.degenerate([np.full(100, 0.25, np.float32) + 1e-7 * rng.standard_normal(100)])
    assert audit.degenerate([rng.standard_normal((4, 8)).astype(np.float32)]) is None
    two = audit.degenerate([rng.standard_normal(10), np.zeros(3)])
    assert two == "output 1 all zero"
    # a single value (l3_pilotnet's steering angle) is not near constant; a single zero is still all zero
    assert audit.degenerate([np.array([[0.187]], np.float32)]) is None
    assert audit.degenerate([np.zeros((1, 1), np.float32)]) == "output 0 all zero"


def test_audit_flags_a_10x_speedup_against_tuned_not_against_untuned():
    assert set(audit.STRONG_BASELINES) == set(baselines.BASELINES) - {"untuned"}
    res = EvalResult(task="t", baseline="tuned", correct=True, speedup=12.5, speedup_lo=12.0, timing_valid=True)
    why = audit.flag(res, None)
    assert why == res.extra["audit"] and "12.5x" in why[0] and "tuned" in why[0]
    assert res.is_faster(1.0)  # marked, not failed
    assert audit.flag(EvalResult(task="t", baseline="untuned", correct=True, speedup=40.0), None) == []
    assert audit.flag(EvalResult(task="t", baseline="ort", correct=True, speedup=9.0), None) == []
    deg = EvalResult(task="t", baseline="untuned", correct=True, speedup=1.2)
    assert "degenerate reference" in audit.flag(deg, "output 0 all zero")[0]


def test_grid_report_renders_platform_and_audit(tmp_path):
    from leka.exp.report import Data, html_report, markdown

    plat = machine_state.around(machine_state.snapshot(), machine_state.snapshot(), {"steal_s": 0.0, "wall_s": 1.0})
    moved = {**plat, "moved": "frequency 3000 -> 2000 MHz (over 10%)"}
    cfg = {"name": "g", "arms": [{"name": "leka"}], "baseline": {"tuned_trials": 8}}
    base = {"backend": "llvm", "level": 1, "arm": "leka", "seed": 0, "correct": True, "compiled": True,
            "speedup_ref": 2.0, "timing_valid_ref": True, "speedup_ref_lo": 1.9, "speedup_ref_hi": 2.1}
    rows = [{**base, "job_id": "j0", "task_label": "t0", "platform_ref": plat},
            {**base, "job_id": "j1", "task_label": "t1", "platform_ref": moved, "speedup_ref": 14.0,
             "audit_ref": ["speedup 14.0x over 10x against tuned"]}]
    md = markdown(Data.from_rows(tmp_path, rows, cfg))
    line = next(ln for ln in md.splitlines() if ln.startswith("- llvm platform:"))
    assert machine_state.line({**plat, "moved": None}) in line and "(2 timings)" in line
    assert "moved during 1 of 2 timings (frequency 3000 -> 2000 MHz" in line
    assert "- AUDIT j1: speedup 14.0x over 10x against tuned" in md
    assert "AUDIT j1" in html_report(Data.from_rows(tmp_path, rows, cfg))


def test_run_report_lists_audited_nodes_and_the_platform():
    from leka.report import audit_lines, audit_summary

    class N:
        def __init__(self, i, res):
            self.id, self.result = i, res

    plat = machine_state.around(machine_state.snapshot(), machine_state.snapshot(), None)
    a = EvalResult(task="t", baseline="tuned", correct=True, speedup=20.0, extra={"audit": ["speedup 20.0x"],
                                                                                    "platform": plat})
    b = EvalResult(task="t", correct=True, error_kind="below_physical_floor")
    s = audit_summary([N(1, a), N(2, b)], N(1, a))
    text = "\n".join(audit_lines(s))
    assert "AUDIT: 1 node(s)" in text and "#1: speedup 20.0x" in text and "nodes [2]" in text
    assert "platform of the best's timing: governor" in text
