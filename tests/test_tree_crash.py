"""Crash safety: a writer process is killed with SIGKILL at random points, 20 times, on the same store.

After each kill the store must open, pass `PRAGMA integrity_check`, and every node in it must be whole:
all the artifacts its meta promises (with matching checksums), its result, and consistent
deferred-acceptance bookkeeping. Run as a script, this file is the writer.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KILLS = 20


def _sha(v: str | bytes) -> str:
    return hashlib.sha256(v.encode() if isinstance(v, str) else v).hexdigest()


def writer(run_dir: str, seed: int) -> None:
    """Write nodes (and updates that add artifacts) as fast as possible until killed."""
    sys.path.insert(0, str(ROOT))
    from candidate_tree import Tree
    from leka.core.types import Edit, EvalResult

    rng = random.Random(seed)
    t = Tree(run_dir, defer=2)
    ids = [n.id for n in t.nodes()]
    print("ready", flush=True)
    i = 0
    while True:
        i += 1
        level = rng.choice(["L0", "L1", "L2"])
        arts: dict[str, str | bytes] = {}
        for k in range(rng.randint(1, 4)):
            size = rng.choice([10, 2_000, 80_000, 400_000])  # big ones keep a transaction open for a while
            arts[f"a{k}.txt" if k % 2 == 0 else f"bin/a{k}.bin"] = (
                ("x" * size + str(i)) if k % 2 == 0 else rng.randbytes(size))
        ok = rng.random() < 0.8
        result = EvalResult(task="t/crash", compiled=True, correct=ok, speedup=rng.uniform(0.5, 2.0) if ok else None,
                            timing_valid=True if ok else None, error_kind=None if ok else "mismatch")
        nid = t.add_node(rng.choice(ids) if ids and rng.random() < 0.95 else None, level,
                         Edit(level=level, kind="pass", payload={"i": i, "seed": seed}), f"{seed}-{i}",
                         result=result, route_reason=f"writer {seed}",
                         meta={"expect": {k: _sha(v) for k, v in arts.items()}, "phase": 1}, artifacts=arts)
        ids.append(nid)
        if rng.random() < 0.5:  # a second atomic write on the same node: new artifacts + meta together
            more = {f"upd/{k}.txt": "u" * rng.choice([10, 300_000]) + str(k) for k in range(rng.randint(1, 3))}
            expect = {**{k: _sha(v) for k, v in arts.items()}, **{k: _sha(v) for k, v in more.items()}}
            t.update(nid, meta={"expect": expect, "phase": 2}, artifacts=more, profile={"seen": i})


def check_store(run_dir: Path) -> int:
    """Assert the store is sound and every node whole; returns the node count."""
    sys.path.insert(0, str(ROOT))
    from candidate_tree import NodeStatus, Tree

    con = sqlite3.connect(run_dir / "tree.sqlite")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    con.close()
    t = Tree(run_dir)
    nodes = t.nodes()
    ids = {n.id for n in nodes}
    for n in nodes:
        assert n.parent is None or n.parent in ids
        assert n.edit is not None and n.result is not None and n.level in ("L0", "L1", "L2")
        assert n.status not in (NodeStatus.PROPOSED, NodeStatus.BUILT), n  # settled in the same transaction
        expect = n.meta["expect"]
        assert n.meta["phase"] in (1, 2) and (n.profile is not None) == (n.meta["phase"] == 2)
        arts = t.artifacts(n.id)
        assert set(arts) == set(expect), (n.id, sorted(arts), sorted(expect))
        assert all(_sha(v) == expect[k] for k, v in arts.items())
        assert (n.status is NodeStatus.PENDING) == (n.defer_left is not None)
        if n.status is NodeStatus.PRUNED:
            assert "pruned_reason" in n.meta
        # The human mirror may lag the database after a kill, but never holds a partial file.
        d = run_dir / "nodes" / str(n.id)
        for k, v in arts.items():
            if (d / k).exists():
                assert (d / k).read_bytes() == (v.encode() if isinstance(v, str) else v), (n.id, k)
    t.close()
    return len(nodes)


def test_sigkill_writer_20_times(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    rng = random.Random(1234)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    counts = [0]
    for k in range(KILLS):
        p = subprocess.Popen([sys.executable, __file__, str(run_dir), str(k)], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready", p.stderr.read() if p.stderr else ""
            time.sleep(rng.uniform(0.02, 0.5))
            assert p.poll() is None, f"writer died on its own: {p.stderr.read() if p.stderr else ''}"
        finally:
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
        assert p.returncode == -signal.SIGKILL
        counts.append(check_store(run_dir))
        assert counts[-1] >= counts[-2]  # committed nodes survive every later kill
    assert counts[-1] > KILLS  # the writers did get work done between kills
    # After the kills, the mirror is rebuilt from the database on demand.
    from candidate_tree import Tree

    t = Tree(run_dir)
    for n in t.nodes()[:50]:
        d = t.artifact_dir(n.id)
        assert all((d / k).read_bytes() == (v.encode() if isinstance(v, str) else v)
                   for k, v in t.artifacts(n.id).items())
    t.close()


if __name__ == "__main__":
    writer(sys.argv[1], int(sys.argv[2]))
