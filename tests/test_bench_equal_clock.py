"""experiments/bench_equal_clock.py: MetaSchedule's database cut at a minute mark is a tuned baseline the
evaluator takes (a line cut by the kill is not a record), and the table's verdicts and anytime curves are
computed from the rows. The slow tier runs the whole thing on the tiny task: MetaSchedule tuned for a
clock, killed, judged against a LEKA run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark import baselines
from benchmark.task import load_task_file
from experiments import bench_equal_clock as E
from experiments.bench_vs_engines import _append

DATA = Path(__file__).parent / "data"


def _db(d: Path, n: int, cut_tail: bool = True) -> Path:
    d.mkdir(parents=True)
    (d / E.WORKLOADS).write_text(json.dumps([["w0"], {"k": 1}]) + "\n")
    lines = [json.dumps([0, [["trace", i], [0.001 * (i + 1)], None, None]]) for i in range(n)]
    (d / E.RECORDS).write_text("\n".join(lines) + "\n" + ('[0, [["trace", 9' if cut_tail else ""))
    return d


def test_a_cut_database_is_a_tuned_baseline_and_a_killed_line_no_record(tmp_path):
    src = _db(tmp_path / "db", 5)
    assert E.complete_lines(src / E.RECORDS) == 5  # the sixth line was cut by the kill
    task = load_task_file(DATA / "tiny_task.py")
    cache = tmp_path / "m1"
    d = E.cut_database(src, baselines.ms_dir(task, "llvm", E.CLOCK_TRIALS, str(cache)), 3, tasks=1,
                       meta={"seconds": 60})
    assert baselines.is_tuned(baselines.ms_dir(task, "llvm", E.CLOCK_TRIALS, str(cache)))
    assert E.complete_lines(d / E.RECORDS) == 3
    assert (d / E.RECORDS).read_text().splitlines() == (src / E.RECORDS).read_text().splitlines()[:3]
    assert json.loads((d / "DONE").read_text())["records"] == 3
    # no record by the cut: not a tuned database (the judge then takes the default lowering)
    empty = E.cut_database(src, tmp_path / "m0", 0, tasks=1, meta={})
    assert not baselines.is_tuned(empty)


def test_verdicts_are_read_from_the_interval():
    ok = {"status": "ok"}
    assert E.verdict({**ok, "lo": 1.02, "hi": 1.3}) == "win"
    assert E.verdict({**ok, "lo": 0.98, "hi": 1.3}) == "tie"
    assert E.verdict({**ok, "lo": 0.7, "hi": 0.9}) == "loss"
    assert E.verdict({"status": "failed", "error_kind": "incorrect"}) == "incorrect"
    assert E.verdict(None) == "-"


def test_anytime_rows_put_both_arms_on_the_answer_scale():
    leka = [(5.0, 1.0), (50.0, 2.0), (100.0, 4.0)]  # in-run speedups vs the run baseline
    ms = [{"status": "ok", "seconds": 60, "speedup": 4.0}, {"status": "ok", "seconds": 120.0, "speedup": 2.0}]
    rows = E.anytime_rows(4.0, leka, ms, 120.0)
    assert rows == [(1, 0.5, 0.25), (2, 1.0, 0.5)]
    # MetaSchedule done by itself at 64 s: its answer holds for the minutes after
    done = [{"status": "ok", "seconds": 60, "speedup": 4.0}, {"status": "ok", "seconds": 64.3, "speedup": 2.0}]
    assert [r[2] for r in E.anytime_rows(4.0, leka, done, 180.0)] == [0.25, 0.5, 0.5]


def test_render_counts_verdicts_per_task(tmp_path):
    for t in ("a", "b", "c"):
        _append(tmp_path / "runs.jsonl", {"task": t, "arm": "leka", "budget": "2m", "evaluations": 7,
                                          "run_dir": f"runs/leka/{t}", "best_speedup": 2.0})
        _append(tmp_path / "tunes.jsonl", {"task": t, "budget_s": 120.0, "tasks": 3,
                                           "cuts": [{"name": "end", "seconds": 120.0, "records": 40}]})
    _append(tmp_path / "judged.jsonl", {"task": "a", "cut": "end", "status": "ok", "speedup": 1.5, "lo": 1.3, "hi": 1.7})
    _append(tmp_path / "judged.jsonl", {"task": "b", "cut": "end", "status": "ok", "speedup": 0.9, "lo": 0.8, "hi": 1.1})
    text = E.render(tmp_path)
    assert "| a | 7 | 3 | 40 | - / - | 1.50x [1.30, 1.70] | win |" in text
    assert "| b | 7 | 3 | 40 | - / - | 0.90x [0.80, 1.10] | tie |" in text
    assert "| c | 7 | 3 | 40 | - / - | - | - |" in text
    assert "Verdicts: - 1, tie 1, win 1 (of 3)" in text


def test_metaschedule_gets_the_wall_clock_leka_took():
    assert E.ms_clock("leka", 120.0, 171.4) == 171.4  # LEKA's waits and imports count for MetaSchedule too
    assert E.ms_clock("leka", 120.0, 86.0) == 120.0  # a run that ended early: never less than the budget
    assert E.ms_clock("leka", 120.0, None) == 120.0  # no LEKA run on record
    assert E.ms_clock("budget", 120.0, 171.4) == 120.0
    with pytest.raises(ValueError, match="--ms-clock"):
        E.ms_clock("lekaa", 120.0, 171.4)


def test_the_cut_settings_win_over_the_callers(tmp_path):
    run = {"backend": "llvm", "task": "t"}
    sets = ["baseline.cache_dir=/elsewhere", "baseline.kind=torch", "evaluator.max_pairs=6"]
    cfg = E.cut_config(run, {"records": 5, "cache_dir": "ms/t/end"}, tmp_path, sets)
    assert (cfg.baseline.kind, cfg.baseline.trials) == ("tuned", E.CLOCK_TRIALS)
    assert cfg.baseline.cache_dir == str(tmp_path / "ms/t/end")
    assert cfg.evaluator.max_pairs == 6
    assert E.cut_config(run, {"records": 0, "cache_dir": "ms/t/m1"}, tmp_path, sets).baseline.kind == "untuned"


@pytest.mark.slow
def test_metaschedule_on_a_clock_is_judged_against_a_leka_run(tmp_path):
    import subprocess
    import sys

    tiny = str(DATA / "tiny_task.py")
    for what in ("run", "judge"):
        r = subprocess.run([sys.executable, "experiments/bench_equal_clock.py", what, "--out", str(tmp_path),
                            "--tasks", tiny, "--budget", "60s"], cwd=E.ROOT, capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
    tune = json.loads((tmp_path / "tunes.jsonl").read_text().splitlines()[-1])
    assert tune["tasks"] == 1 and tune["cuts"][-1]["records"] >= 1, tune
    judged = [json.loads(ln) for ln in (tmp_path / "judged.jsonl").read_text().splitlines()]
    end = next(r for r in judged if r["cut"] == "end")
    assert end["status"] == "ok" and end["kind"] == "tuned" and end["lo"] <= end["speedup"] <= end["hi"], end
