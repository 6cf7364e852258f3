"""The candidate tree: every candidate, its lineage and measurements, in one SQLite file (WAL).

The database is the source of truth. A node, its artifacts and any status changes it causes in its
ancestors (deferred acceptance) are written in one `BEGIN IMMEDIATE ... COMMIT`, so a process killed at
any point leaves either the whole change or none of it. Artifacts are then mirrored to
`RUN_DIR/nodes/<id>/` for humans by a background thread (flushed by `close()`); a missing or stale
mirror file is rebuilt from the database by `artifact_dir()`.

Deferred acceptance is described precisely in README.md ("Deferred acceptance").
"""

from __future__ import annotations

import json
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from candidate_tree.schema import (
    DB_NAME,
    NODE_COLUMNS,
    NODE_RECORD,
    NODES_DIR,
    SCHEMA_SQL,
    SCHEMA_VERSION,
    SETTLED,
    SETTLED_VALUES,
    Node,
    NodeStatus,
    check_artifact_name,
    decide,
    dump_json,
    is_timed,
    level_rank,
)
from leka.core.levels import level_names
from leka.core.types import Edit, EvalResult, Level


class Tree:
    """The candidate tree of one run. One writer process at a time; any number of readers.

    `defer` is the number of lower-level follow-ups a slower-than-parent node waits before it is
    pruned (RunConfig.defer_followups); 0 prunes such nodes at once.
    """

    def __init__(self, run_dir: str | Path, *, defer: int = 2, create: bool = True, mirror: bool = True,
                 synchronous: str = "NORMAL", timeout_s: float = 30.0):
        if defer < 0:
            raise ValueError("defer must be >= 0")
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / DB_NAME
        self.defer = defer
        self.mirror = mirror
        if not self.path.exists() and not create:
            raise FileNotFoundError(f"no candidate tree at {self.path}")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / NODES_DIR).mkdir(exist_ok=True)
        self._lock = threading.RLock()
        self._mq: queue.Queue[tuple[int, dict[str, str | bytes]] | None] = queue.Queue(maxsize=1024)
        self._mthread: threading.Thread | None = None
        self.mirror_errors: list[str] = []
        self._db = sqlite3.connect(str(self.path), timeout=timeout_s, isolation_level=None,
                                   check_same_thread=False)
        self._db.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode survives any process kill; only an OS crash / power loss can drop the
        # last commits (never corrupt the file). FULL also fsyncs every commit (see bench_tree.py).
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"bad synchronous mode {synchronous!r}")
        self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
        self._db.execute("PRAGMA foreign_keys=ON")
        has_schema = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='artifacts'").fetchone() is not None
        if has_schema:  # a reader opening a live run must not queue behind the writer for a write lock
            return
        with self._tx() as c:
            # statement by statement: executescript() would COMMIT the surrounding transaction
            for stmt in SCHEMA_SQL.split(";"):
                if stmt.strip():
                    c.execute(stmt)
            c.execute("INSERT OR IGNORE INTO tree_meta(key, value) VALUES ('schema_version', ?)",
                      (str(SCHEMA_VERSION),))

    # ----------------------------------------------------------------- plumbing
    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        """Finish the mirror, then close the database. Safe to call twice."""
        if self._mthread is not None:
            self._mq.put(None)
            self._mthread.join()
            self._mthread = None
        with self._lock:
            self._db.close()

    def __enter__(self) -> Tree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self.count()

    def _row_to_node(self, row: tuple[Any, ...]) -> Node:
        (nid, parent, level, edit, chash, status, result, profile, reason, meta, defer_left, created,
         updated, names) = row
        return Node(
            id=nid, parent=parent, level=level,
            edit=Edit.model_validate_json(edit) if edit else None,
            candidate_hash=chash, status=status,
            result=EvalResult.model_validate_json(result) if result else None,
            profile=json.loads(profile) if profile else None,
            route_reason=reason, meta=json.loads(meta), defer_left=defer_left,
            artifacts=sorted(names.split("\n")) if names else [],
            created=created, updated=updated,
        )

    def _select(self, where: str = "", params: tuple[Any, ...] = (), tail: str = "") -> list[Node]:
        with self._lock:
            rows = self._db.execute(f"SELECT {NODE_COLUMNS} FROM nodes {where} {tail}", params).fetchall()
        return [self._row_to_node(r) for r in rows]

    # ----------------------------------------------------------------- writes
    def add_node(self, parent: int | None = None, level: Level | None = None, edit: Edit | None = None,
                 candidate_hash: str = "", status: str | NodeStatus = NodeStatus.PROPOSED,
                 result: EvalResult | None = None, profile: dict[str, Any] | None = None,
                 route_reason: str = "", meta: dict[str, Any] | None = None,
                 artifacts: dict[str, str | bytes] | None = None, *, settle: bool = True,
                 defer: int | None = None) -> int:
        """Write one node whole (record + artifacts + the deferred-acceptance effects) and return its id.

        With a result and the default status, the status is derived from the result and deferred
        acceptance is applied (`settle=False` stores the given status as is).
        """
        if not candidate_hash:
            raise ValueError("candidate_hash is required")
        if level is not None and level not in level_names():
            raise ValueError(f"bad level {level!r}; expected one of {level_names()} or None")
        status = NodeStatus(status)
        arts = {check_artifact_name(k): v for k, v in (artifacts or {}).items()}
        now = time.time()
        d = self.defer if defer is None else defer
        speedup, correct, timing_valid = self._result_cols(result)
        meta = dict(meta or {})
        defer_left = None
        with self._tx() as c:
            ref = None
            if parent is not None:
                row = c.execute("SELECT speedup, timing_valid FROM nodes WHERE id=?", (parent,)).fetchone()
                if row is None:
                    raise ValueError(f"parent node {parent} does not exist")
                ref = row[0] if row[1] else None
            if settle and result is not None and status in (NodeStatus.PROPOSED, NodeStatus.MEASURED):
                # decided before the INSERT: a new node has no children, so no cascade is needed
                status, defer_left, reason = decide(result, level, ref, d)
                if reason:
                    meta["pruned_reason"] = reason
            elif status == NodeStatus.PENDING:
                defer_left = d  # a status given by hand still gets its follow-up counter
            cur = c.execute(
                "INSERT INTO nodes(parent, level, edit, candidate_hash, status, result, profile, route_reason,"
                " meta, speedup, correct, timing_valid, defer_left, followups, created, updated)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (parent, level, dump_json(edit), candidate_hash, status.value, dump_json(result), dump_json(profile),
                 route_reason, dump_json(meta), speedup, correct, timing_valid, defer_left,
                 None if defer_left is None else "[]", now, now))
            nid = int(cur.lastrowid or 0)
            self._put_artifacts(c, nid, arts)
            if settle and status in SETTLED:
                self._notify(c, nid, level, result, d)
        self._mirror(nid, arts)
        return nid

    def update(self, nid: int, *, status: str | NodeStatus | None = None, result: EvalResult | None = None,
               profile: dict[str, Any] | None = None, meta: dict[str, Any] | None = None,
               route_reason: str | None = None, artifacts: dict[str, str | bytes] | None = None,
               settle: bool = True, defer: int | None = None) -> Node:
        """Change a node in one transaction. `meta` is merged into the stored meta; artifacts are added
        or replaced by name. A new result without an explicit status derives the status and applies
        deferred acceptance, as in `add_node`."""
        arts = {check_artifact_name(k): v for k, v in (artifacts or {}).items()}
        with self._tx() as c:
            row = c.execute("SELECT meta FROM nodes WHERE id=?", (nid,)).fetchone()
            if row is None:
                raise KeyError(f"no node {nid}")
            sets: dict[str, Any] = {"updated": time.time()}
            d = self.defer if defer is None else defer
            if status is not None:
                sets["status"] = NodeStatus(status).value
                # keep "pending <=> defer_left is set" true for statuses given by hand
                pend = NodeStatus(status) == NodeStatus.PENDING
                sets["defer_left"], sets["followups"] = (d, "[]") if pend else (None, None)
            if result is not None:
                sets["result"] = dump_json(result)
                sets["speedup"], sets["correct"], sets["timing_valid"] = self._result_cols(result)
            if profile is not None:
                sets["profile"] = dump_json(profile)
            if route_reason is not None:
                sets["route_reason"] = route_reason
            if meta:
                sets["meta"] = dump_json({**json.loads(row[0]), **meta})
            c.execute(f"UPDATE nodes SET {', '.join(f'{k}=?' for k in sets)} WHERE id=?", (*sets.values(), nid))
            self._put_artifacts(c, nid, arts)
            if settle and result is not None and status in (None, NodeStatus.PROPOSED, NodeStatus.MEASURED):
                self._settle(c, nid, d, derive=True)
            elif settle and status is not None and NodeStatus(status) in SETTLED:
                self._settle(c, nid, d, derive=NodeStatus(status) == NodeStatus.MEASURED)
        self._mirror(nid, arts)
        return self.get(nid)

    def settle(self, nid: int, defer: int | None = None) -> NodeStatus:
        """Apply deferred acceptance to a node that already has its result (add_node/update do this
        themselves; call it after writing with `settle=False`). Idempotent: a descendant is counted
        against a pending ancestor at most once."""
        with self._tx() as c:
            row = c.execute("SELECT status FROM nodes WHERE id=?", (nid,)).fetchone()
            if row is None:
                raise KeyError(f"no node {nid}")
            derive = row[0] in (NodeStatus.PROPOSED, NodeStatus.BUILT, NodeStatus.MEASURED, NodeStatus.CORRECT,
                                NodeStatus.FAILED)
            self._settle(c, nid, self.defer if defer is None else defer, derive=derive)
            return NodeStatus(c.execute("SELECT status FROM nodes WHERE id=?", (nid,)).fetchone()[0])

    def invalidate(self, nid: int, reason: str) -> None:
        """Mark a node's result as untrustworthy (kept for the record; excluded from best/frontier)."""
        self.update(nid, status=NodeStatus.INVALIDATED, meta={"invalidated_reason": reason}, settle=False)

    def expire_pending(self) -> list[int]:
        """Prune every node still pending (end of a run: no more follow-ups will come)."""
        with self._tx() as c:
            ids = [r[0] for r in c.execute("SELECT id FROM nodes WHERE status='pending' ORDER BY id")]
            for pid in ids:
                if c.execute("SELECT status FROM nodes WHERE id=?", (pid,)).fetchone()[0] == "pending":
                    self._prune(c, pid, "run ended while pending")
        return ids

    @staticmethod
    def _result_cols(r: EvalResult | None) -> tuple[float | None, int, int]:
        if r is None:
            return None, 0, 0
        return (r.speedup if r.correct else None), int(r.correct), int(bool(r.timing_valid))

    @staticmethod
    def _put_artifacts(c: sqlite3.Connection, nid: int, arts: dict[str, str | bytes]) -> None:
        rows = []
        for name, data in arts.items():
            if isinstance(data, str):
                rows.append((nid, name, 1, data.encode("utf-8")))
            elif isinstance(data, (bytes, bytearray, memoryview)):
                rows.append((nid, name, 0, bytes(data)))
            else:
                raise TypeError(f"artifact {name!r} must be str or bytes, not {type(data).__name__}")
        if rows:
            c.executemany("INSERT OR REPLACE INTO artifacts(node_id, name, is_text, data) VALUES (?,?,?,?)", rows)

    # ----------------------------------------------------------------- deferred acceptance
    def _settle(self, c: sqlite3.Connection, nid: int, defer: int, *, derive: bool) -> None:
        parent, level, status, result_s = c.execute(
            "SELECT parent, level, status, result FROM nodes WHERE id=?", (nid,)).fetchone()
        result = EvalResult.model_validate_json(result_s) if result_s else None
        if derive and result is not None:
            new, left, reason = decide(result, level, self._ref_speedup(c, parent), defer)
            c.execute("UPDATE nodes SET status=?, defer_left=?, followups=?, updated=? WHERE id=?",
                      (new.value, left, None if left is None else "[]", time.time(), nid))
            if reason:
                self._prune(c, nid, reason)
            status = new.value
        if status in SETTLED_VALUES:
            self._notify(c, nid, level, result, defer)

    def _notify(self, c: sqlite3.Connection, nid: int, level: str | None, result: EvalResult | None,
                defer: int) -> None:
        """A node's evaluation is over: tell its pending ancestors, nearest first (README's rule)."""
        if c.execute("SELECT 1 FROM nodes WHERE status='pending' LIMIT 1").fetchone() is None:
            return  # the common case: nothing is waiting, skip the walk up the lineage
        anc = c.execute(
            "WITH RECURSIVE anc(id, depth) AS (SELECT parent, 1 FROM nodes WHERE id=? "
            " UNION ALL SELECT n.parent, anc.depth + 1 FROM nodes n JOIN anc ON n.id = anc.id"
            " WHERE n.parent IS NOT NULL) "
            "SELECT nodes.id, nodes.parent, nodes.level, nodes.defer_left, nodes.followups FROM anc"
            " JOIN nodes ON nodes.id = anc.id WHERE nodes.status='pending' ORDER BY anc.depth", (nid,)).fetchall()
        speedup = result.speedup if is_timed(result) else None
        now = time.time()
        for aid, aparent, alevel, left, followups in anc:
            if c.execute("SELECT status FROM nodes WHERE id=?", (aid,)).fetchone()[0] != "pending":
                continue  # pruned by an earlier step of this loop (cascade from a farther ancestor)
            bar = self._ref_speedup(c, aparent)
            if speedup is not None and (bar is None or speedup > bar):
                c.execute("UPDATE nodes SET status='measured', defer_left=NULL, updated=?,"
                          " meta=json_set(meta, '$.accepted_by', ?) WHERE id=?", (now, nid, aid))
                continue
            counted = json.loads(followups or "[]")
            if level_rank(level) <= level_rank(alevel) or nid in counted:
                continue
            counted.append(nid)
            left = (left if left is not None else defer) - 1
            c.execute("UPDATE nodes SET defer_left=?, followups=?, updated=? WHERE id=?",
                      (left, json.dumps(counted), now, aid))
            if left <= 0:
                self._prune(c, aid, f"no lower-level follow-up beat its parent within {len(counted)} tries")

    @staticmethod
    def _ref_speedup(c: sqlite3.Connection, parent: int | None) -> float | None:
        if parent is None:
            return None
        row = c.execute("SELECT speedup, timing_valid FROM nodes WHERE id=?", (parent,)).fetchone()
        return row[0] if row is not None and row[1] else None

    @staticmethod
    def _prune(c: sqlite3.Connection, nid: int, reason: str) -> None:
        """Prune a node and the live part of its subtree: a branch whose root did not pay off is closed."""
        now = time.time()
        c.execute("UPDATE nodes SET status='pruned', defer_left=NULL, updated=?,"
                  " meta=json_set(meta, '$.pruned_reason', ?) WHERE id=?", (now, reason, nid))
        c.execute(
            "WITH RECURSIVE sub(id) AS (SELECT id FROM nodes WHERE parent=? "
            " UNION ALL SELECT n.id FROM nodes n JOIN sub ON n.parent = sub.id) "
            "UPDATE nodes SET status='pruned', defer_left=NULL, updated=?,"
            " meta=json_set(meta, '$.pruned_reason', ?) "
            "WHERE id IN (SELECT id FROM sub) AND status IN ('correct', 'measured', 'pending')",
            (nid, now, f"ancestor {nid} pruned"))

    # ----------------------------------------------------------------- reads
    def get(self, nid: int) -> Node:
        got = self._select("WHERE id=?", (nid,))
        if not got:
            raise KeyError(f"no node {nid}")
        return got[0]

    def nodes(self) -> list[Node]:
        return self._select(tail="ORDER BY id")

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM nodes").fetchone()[0])

    def best(self, k: int = 1, *, include_pruned: bool = False) -> list[Node]:
        """Correct, validly timed nodes by speedup (highest first); ties go to the older node."""
        statuses = ["measured", "pending"] + (["pruned"] if include_pruned else [])
        q = ",".join("?" * len(statuses))
        # "+status": keep the planner off the status index, so it walks nodes_best in order instead
        return self._select(f"WHERE speedup IS NOT NULL AND correct=1 AND timing_valid=1 AND +status IN ({q})",
                            tuple(statuses), f"ORDER BY speedup DESC, id ASC LIMIT {int(k)}")

    def answer(self) -> Node | None:
        """The best validly timed node, unless the root is correct and that node is slower than
        min(1, the root's speedup): then the root (a noisy machine once answered a 0.06x node under a
        1.3x A/A root). Against PyTorch every node may be below 1.0 (root 0.02x: a 0.4x node is the
        answer); against the root itself 1.0 is the bar. With nothing validly timed: the fastest
        correct node by its noisy speedup, or None."""
        top = self.best(1)
        roots = [r for r in self.roots() if r.result is not None and r.result.correct]
        bar = min(1.0, roots[0].speedup) if roots and roots[0].speedup is not None else None
        if top and bar is not None and (top[0].speedup or 0.0) < bar:
            return roots[0]
        if top:
            return top[0]
        if roots and roots[0].speedup is None:
            return roots[0]
        correct = [n for n in self.nodes() if n.result is not None and n.result.correct and n.result.speedup]
        return max(correct, key=lambda n: n.result.speedup, default=None)

    def lineage(self, nid: int) -> list[Node]:
        """Root ... nid."""
        with self._lock:
            rows = self._db.execute(
                "WITH RECURSIVE anc(id, depth) AS (SELECT ?, 0 UNION ALL SELECT n.parent, anc.depth + 1"
                " FROM nodes n JOIN anc ON n.id = anc.id WHERE n.parent IS NOT NULL) "
                f"SELECT {NODE_COLUMNS} FROM anc JOIN nodes ON nodes.id = anc.id ORDER BY anc.depth DESC",
                (nid,)).fetchall()
        if not rows:
            raise KeyError(f"no node {nid}")
        return [self._row_to_node(r) for r in rows]

    def children(self, nid: int) -> list[Node]:
        return self._select("WHERE parent=?", (nid,), "ORDER BY id")

    def roots(self) -> list[Node]:
        return self._select("WHERE parent IS NULL", (), "ORDER BY id")

    def frontier(self) -> list[Node]:
        """Nodes a search may expand next: correct, measured or pending (never pruned/invalidated)."""
        return self._select("WHERE status IN ('correct', 'measured', 'pending')", (), "ORDER BY id")

    def by_hash(self, candidate_hash: str) -> Node | None:
        """The node that already evaluated this candidate: one with a result and not invalidated if any,
        else the oldest node with the hash."""
        got = self._select("WHERE candidate_hash=?", (candidate_hash,),
                           "ORDER BY (status = 'invalidated'), (result IS NULL), id LIMIT 1")
        return got[0] if got else None

    def artifact(self, nid: int, name: str) -> str | bytes | None:
        with self._lock:
            row = self._db.execute("SELECT is_text, data FROM artifacts WHERE node_id=? AND name=?",
                                   (nid, name)).fetchone()
        if row is None:
            return None
        return bytes(row[1]).decode("utf-8") if row[0] else bytes(row[1])

    def artifacts(self, nid: int) -> dict[str, str | bytes]:
        with self._lock:
            rows = self._db.execute("SELECT name, is_text, data FROM artifacts WHERE node_id=? ORDER BY name",
                                    (nid,)).fetchall()
        return {n: (bytes(d).decode("utf-8") if t else bytes(d)) for n, t, d in rows}

    def artifact_dir(self, nid: int) -> Path:
        """RUN_DIR/nodes/<id>/, with the mirror brought up to date from the database."""
        node = self.get(nid)
        arts = self.artifacts(nid)
        d = self.run_dir / NODES_DIR / str(nid)
        self.flush_mirror()
        stale = {n: v for n, v in arts.items() if not self._same(d / n, v)}
        self._write_files(d, {**stale, NODE_RECORD: node.model_dump_json(indent=1)})
        return d

    # ----------------------------------------------------------------- mirror (for humans only)
    @staticmethod
    def _same(path: Path, v: str | bytes) -> bool:
        try:
            return path.read_bytes() == (v.encode("utf-8") if isinstance(v, str) else v)
        except OSError:
            return False

    def _mirror(self, nid: int, arts: dict[str, str | bytes]) -> None:
        """Queue a committed node's artifacts for the mirror thread: file creation costs more than the
        database write itself, and nothing reads the mirror back, so the writer does not wait for it."""
        if not self.mirror or not arts:
            return
        if self._mthread is None:
            self._mthread = threading.Thread(target=self._mirror_loop, name="tree-mirror", daemon=True)
            self._mthread.start()
        self._mq.put((nid, arts))

    def _mirror_loop(self) -> None:
        made: set[Path] = set()
        while True:
            item = self._mq.get()
            try:
                if item is None:
                    return
                nid, arts = item
                self._write_files(self.run_dir / NODES_DIR / str(nid), arts, made)
            except OSError as e:  # a full disk must not stop the search: the database has everything
                self.mirror_errors.append(f"node {item[0] if item else '?'}: {e}")
            finally:
                self._mq.task_done()

    def flush_mirror(self) -> None:
        """Wait until every committed artifact is mirrored to files."""
        if self._mthread is not None:
            self._mq.join()

    @staticmethod
    def _write_files(d: Path, items: dict[str, str | bytes], made: set[Path] | None = None) -> None:
        for name, v in items.items():
            p = d / name
            if made is None or p.parent not in made:
                p.parent.mkdir(parents=True, exist_ok=True)
                if made is not None:
                    made.add(p.parent)
            tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
            tmp.write_bytes(v.encode("utf-8") if isinstance(v, str) else v)
            os.replace(tmp, p)  # a kill mid-write leaves a stray .tmp, never a half file under the real name

    # ----------------------------------------------------------------- exports
    def to_json(self, path: str | Path | None = None) -> str:
        from candidate_tree.export import to_json

        return to_json(self, path)

    def to_networkx(self) -> Any:
        from candidate_tree.export import to_networkx

        return to_networkx(self)

    def export_html(self, path: str | Path, title: str | None = None) -> Path:
        from candidate_tree.export import export_html

        return export_html(self, path, title=title)

    def integrity_check(self) -> str:
        with self._lock:
            return str(self._db.execute("PRAGMA integrity_check").fetchone()[0])
