"""experiments/bench_vs_engines.py's bookkeeping: rows written as JSON lines, read back across a kill
(a cut-off line is an item to do again), and the table with its intervals, refusals, SOL score and
summary computed from them. The runs and evaluations themselves are leka run / Evaluator.evaluate,
tested elsewhere; the committed tables are made by the script on the machines."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bench_vs_engines", ROOT / "experiments" / "bench_vs_engines.py")
bve = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bve)


def _ok(arm, task, kind, sp, lo, hi, t_c, roof=None):
    r = {"backend": "llvm", "arm": arm, "task": task, "kind": kind, "label": f"{kind} label", "status": "ok",
         "correct": True, "speedup": sp, "lo": lo, "hi": hi, "timing_valid": True, "t_candidate_s": t_c,
         "t_baseline_s": t_c * sp, "ended": 1.7e9}
    if roof is not None:
        r.update(roof_s=roof, roof_fraction=roof / t_c,
                 peaks={"gflops": 440.0, "gbps": 28.0, "source": "measured", "model": "Test CPU", "threads": 2,
                        "dtype": "float32", "levels": [{"name": "L1", "gbps": 900.0}]})
    return r


def test_rows_survive_a_cut_off_line_and_render_the_table(tmp_path):
    out = tmp_path
    for t in ("t1", "t2"):
        bve._append(out / "runs.jsonl", {"backend": "llvm", "arm": "leka", "task": t, "run_dir": f"runs/leka/{t}",
                                         "best_correct": True, "evaluations": 9, "budget": "5m",
                                         "nodes_by_level": {"L0": 1, "L1": 5, "L2": 2},
                                         "stop_reason": "wall-clock budget of 300 s used", "ended": 1.7e9})
    rows = [_ok("leka", "t1", "untuned", 4.0, 3.8, 4.2, 1e-3, roof=0.25e-3),
            _ok("leka", "t1", "tuned", 1.5, 1.4, 1.6, 1e-3),
            _ok("leka", "t1", "torch", 0.8, 0.75, 0.85, 1e-3),
            _ok("leka", "t1", "ort", 1.2, 1.1, 1.3, 1e-3),
            {"backend": "llvm", "arm": "leka", "task": "t1", "kind": "mnn", "status": "unsupported",
             "error": "MNN cannot convert"},
            _ok("leka", "t2", "untuned", 2.0, 1.9, 2.1, 2e-3, roof=0.2e-3),
            {"backend": "llvm", "arm": "leka", "task": "t2", "kind": "tuned", "status": "not_tuned"},
            _ok("leka", "t2", "torch", 1.1, 0.9, 1.3, 2e-3),
            _ok("leka", "t2", "ort", 2.5, 2.4, 2.6, 2e-3)]
    for r in rows:
        bve._append(out / "judged.jsonl", r)
    with open(out / "judged.jsonl", "a") as f:
        f.write('{"backend": "llvm", "arm": "leka", "task": "t2", "kind": "mn')  # killed mid-write
    assert len(bve.read_rows(out / "judged.jsonl")) == len(rows)
    (out / "judge_meta-1.json").write_text(json.dumps({"machine": "test machine", "versions": "torch 0", "sets": []}))
    md = bve.render(out)
    assert "MetaSchedule tool off (tuner.enabled=false, the paper's setting); budget 5m a task, seed 0.\n" in md, md
    # a run's resolved config says whether its idle MetaSchedule round was on: the Runs line says how many
    for t, idle in (("t1", "true"), ("t2", "false")):
        (out / "runs" / "leka" / t).mkdir(parents=True)
        (out / "runs" / "leka" / t / "config.yaml").write_text(f"tuner:\n  enabled: false\n  when_idle: {idle}\n")
    md = bve.render(out)
    assert "seed 0; the idle MetaSchedule round on (tuner.when_idle=true) in 1 of 2 runs." in md, md
    # per task: the interval, + above 1, - below 1, the refusal and the missing database in words
    assert "| t1 | leka | 9 | 1/5/2 | 4.00x [3.80, 4.20] + | 1.50x [1.40, 1.60] + | 0.80x [0.75, 0.85] - " in md, md
    assert "| 1.20x [1.10, 1.30] + | n/a | 25% |" in md, md
    assert "| t2 | leka | 9 | 1/5/2 | 2.00x [1.90, 2.10] + | not tuned | 1.10x [0.90, 1.30] |" in md, md
    # SOL vs tuned for t1: roof 0.25 ms, tuned 1.5 ms, LEKA 1 ms -> 1 / (1 + 0.75 / 1.25) = 0.625
    assert "| 25% | 0.62 |" in md or "| 25% | 0.63 |" in md, md
    # the best engine per task is the one LEKA beats least: t1 torch (0.80x), t2 torch (1.10x)
    assert "- leka: median task 0.95x over 2 tasks (at least 1.00x on 1)" in md, md
    assert "| leka | torch | 2 | 0.95x | 0.94x [" in md and "| leka | ort | 2 | 1.85x |" in md, md
    assert "| 2.50x [2.40, 2.60] + | - | 10% | - |" in md, md  # t2's MNN row was cut off: to do again
    assert "Test CPU, 440 GFLOP/s float32 at 2 threads; bandwidth L1 900 GB/s, DRAM 28 GB/s" in md, md
    assert "Machine: test machine" in md


def test_tasks_behind_the_best_engine_name_their_hottest_kernel_and_the_before_table_is_compared(tmp_path):
    before, after = tmp_path / "before", tmp_path / "after"
    hot = {"name": "max", "kind": "reduction", "share": 0.71, "bound": "memory", "level": "L2",
           "roof_fraction": 0.006, "l2_override": False, "scheduled": True}
    for out, sp in ((before, 0.5), (after, 1.6)):
        out.mkdir()
        for t in ("l1_a", "l3_b"):
            bve._append(out / "runs.jsonl", {"backend": "llvm", "arm": "leka", "task": t, "run_dir": f"runs/{t}",
                                             "best_correct": True, "evaluations": 9, "budget": "5m",
                                             "stop_reason": "wall-clock budget of 300 s used", "ended": 1.7e9})
        bve._append(out / "judged.jsonl", {**_ok("leka", "l1_a", "untuned", 3.0, 2.9, 3.1, 1e-3, roof=0.5e-3), "hot": hot})
        bve._append(out / "judged.jsonl", _ok("leka", "l1_a", "torch", 2.0, 1.9, 2.1, 1e-3))
        bve._append(out / "judged.jsonl", _ok("leka", "l1_a", "ort", sp, sp - 0.1, sp + 0.1, 1e-3))
        bve._append(out / "judged.jsonl", _ok("leka", "l3_b", "untuned", 9.0, 8.0, 10.0, 1e-3))
        bve._append(out / "judged.jsonl", _ok("leka", "l3_b", "ort", 0.3, 0.29, 0.31, 1e-3))
    md = bve.render(after, before)
    # l1_a is ahead now (1.6x of ORT, interval above 1): no bound line; l3_b is behind without a profile
    assert "- l3_b: 0.30x of ort; no profile of the answer" in md, md
    assert "- l1_a:" not in md and "leka: 1 tasks ahead of the best engine with the interval above 1, 1 behind." in md
    assert "the hottest kernel of the Level-1 answers is at median 0.6% of its roof (1 answers)" in md, md
    assert "| l1_a | 1.00x | 3.20x | 0.50x | 1.60x |" in md, md  # ORT 1.6 / 0.5; best engine before ORT 0.5
    assert "| l3_b | - | 1.00x | 0.30x | 0.30x |" in md, md
    md = bve.render(before)
    assert "- l1_a: 0.50x of ort; `max` (reduction, 71% of the time), memory-bound (L2) at 0.6% of its roof" in md, md
    assert "## Against the before table" not in md
