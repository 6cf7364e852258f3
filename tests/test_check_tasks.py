"""experiments/check_tasks.py's checks (issue 46): one task's row (import, exact round trip, structural
hash, correctness, the suite's caps), duplicates over a table, and the verdict a row gets."""

from __future__ import annotations

from pathlib import Path

from experiments.check_tasks import _bounds, check_one, mark_duplicates, passed

DATA = Path(__file__).parent / "data"


def test_a_task_row_has_every_check(tmp_path):
    row = check_one(str(DATA / "tiny_task.py"))
    assert row["import_ok"] and row["round_trip"] and row["correct"] and row["within_bounds"], row
    assert len(row["shash"]) == 16 and passed(row)
    # the hash is the computation's, not the weights': the same file under another name hashes alike,
    # and a different computation does not
    same = tmp_path / "same.py"
    same.write_text((DATA / "tiny_task.py").read_text().replace("torch.randn(n)", "torch.ones(n)"))
    other = tmp_path / "other.py"
    other.write_text((DATA / "tiny_task.py").read_text().replace("torch.relu(x)", "torch.sigmoid(x)"))
    rows = [row, {**check_one(str(same)), "id": "same"}, {**check_one(str(other)), "id": "other"}]
    mark_duplicates(rows)
    assert rows[0]["duplicate_of"] == ["same"] and rows[1]["duplicate_of"] == [row["id"]]
    assert "duplicate_of" not in rows[2]
    assert not passed(rows[0]) and passed(rows[2])


def test_over_a_cap_or_inexact_fails():
    base = {"id": "t", "level": 2, "import_ok": True, "round_trip": True, "correct": True, "within_bounds": True}
    assert passed(base)
    assert not passed({**base, "within_bounds": False})
    assert not passed({**base, "round_trip": False})
    assert not passed({**base, "correct": False})
    for level, ms, mib, ok in [(1, 299.0, 63.0, True), (1, 301.0, 1.0, False), (2, 1.0, 65.0, False),
                               (3, 1999.0, 255.0, True), (3, 2001.0, 1.0, False)]:
        row = {"level": level, "untuned_ms": ms, "mib": mib}
        _bounds(row)
        assert row["within_bounds"] is ok, row
        assert ok or "bounds" in row
    gpu = {"level": 1, "untuned_ms": 900.0, "mib": 1.0, "backend": "opencl"}  # the time cap is the CPU's
    _bounds(gpu)
    assert gpu["within_bounds"]
