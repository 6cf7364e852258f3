"""EXP_DIR/results.sqlite: one row per job, with its state.

pending -> running (attempt n) -> done. Only the driver writes. A job left `running` by a killed
driver is, on resume, either adopted (its attempt folder holds a finished job_result.json: not run
again) or given a new attempt (its old attempt's folder stays, never counted). A result is accepted
only for the job's current attempt, so a straggler of an older attempt cannot end a job twice.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

DB = "results.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY,
    spec TEXT NOT NULL,          -- the Job as JSON
    state TEXT NOT NULL,         -- pending | running | done
    attempt INTEGER NOT NULL DEFAULT 0,
    started REAL, ended REAL,
    correct INTEGER, speedup_ref REAL, speedup_torch REAL,
    error TEXT,
    result TEXT                  -- the whole row (leka.exp.judge.execute) as JSON
);
CREATE TABLE IF NOT EXISTS events (t REAL NOT NULL, job_id TEXT NOT NULL, attempt INTEGER, what TEXT NOT NULL);
"""


class Store:
    def __init__(self, exp_dir: Path):
        self.path = Path(exp_dir) / DB
        self.conn = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=FULL")  # a row written is a row kept, even on power loss
        self.conn.executescript(_SCHEMA)

    def close(self) -> None:
        self.conn.close()

    def _event(self, job_id: str, attempt: int | None, what: str) -> None:
        self.conn.execute("INSERT INTO events VALUES (?, ?, ?, ?)", (time.time(), job_id, attempt, what))

    def add_jobs(self, jobs) -> int:
        """Insert jobs not yet known (a resumed grid keeps its rows). Returns how many were new."""
        n = 0
        with self.conn:
            for j in jobs:
                cur = self.conn.execute("INSERT OR IGNORE INTO jobs (job_id, spec, state) VALUES (?, ?, 'pending')",
                                        (j.job_id, j.model_dump_json()))
                n += cur.rowcount
        return n

    def start(self, job_id: str) -> int:
        """Mark running under a new attempt id; returns it."""
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            (a,) = self.conn.execute("SELECT attempt FROM jobs WHERE job_id=?", (job_id,)).fetchone()
            self.conn.execute("UPDATE jobs SET state='running', attempt=?, started=? WHERE job_id=?",
                              (a + 1, time.time(), job_id))
            self._event(job_id, a + 1, "start")
        return a + 1

    def finish(self, job_id: str, attempt: int, row: dict[str, Any]) -> bool:
        """Record the result of `attempt`; False (and nothing written) if the job is not running that attempt."""
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            cur = self.conn.execute(
                "UPDATE jobs SET state='done', ended=?, correct=?, speedup_ref=?, speedup_torch=?, error=?, result=? "
                "WHERE job_id=? AND attempt=? AND state='running'",
                (time.time(), int(bool(row.get("correct"))), row.get("speedup_ref"), row.get("speedup_torch"),
                 row.get("error"), json.dumps(row, default=str), job_id, attempt))
            ok = cur.rowcount == 1
            self._event(job_id, attempt, "done" if ok else "stale result ignored")
        return ok

    def requeue(self, job_id: str, why: str) -> None:
        with self.conn:
            self.conn.execute("UPDATE jobs SET state='pending' WHERE job_id=? AND state='running'", (job_id,))
            self._event(job_id, None, f"requeued: {why}")

    def by_state(self, state: str) -> list[tuple[str, int, dict[str, Any]]]:
        rows = self.conn.execute("SELECT job_id, attempt, spec FROM jobs WHERE state=? ORDER BY rowid", (state,))
        return [(j, a, json.loads(s)) for j, a, s in rows]

    def counts(self) -> dict[str, int]:
        out = {"pending": 0, "running": 0, "done": 0, "failed": 0}
        for st, n in self.conn.execute("SELECT state, count(*) FROM jobs GROUP BY state"):
            out[st] = n
        (out["failed"],) = self.conn.execute("SELECT count(*) FROM jobs WHERE state='done' AND error IS NOT NULL "
                                             "AND correct=0").fetchone()
        return out

    def results(self) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT result FROM jobs WHERE state='done' ORDER BY job_id")
        return [json.loads(r) for (r,) in rows]

    def time_per_budget(self) -> float | None:
        """Mean over finished jobs of wall time / budget (judging and overheads included): the ETA's scale."""
        xs = [(e - s) / max(1.0, json.loads(spec)["budget_s"]) for s, e, spec in self.conn.execute(
            "SELECT started, ended, spec FROM jobs WHERE state='done' AND started IS NOT NULL AND ended IS NOT NULL")]
        return sum(xs) / len(xs) if xs else None

    def events(self, job_id: str | None = None) -> list[tuple[float, str, int | None, str]]:
        q = "SELECT t, job_id, attempt, what FROM events" + (" WHERE job_id=?" if job_id else "") + " ORDER BY rowid"
        return list(self.conn.execute(q, (job_id,) if job_id else ()))
