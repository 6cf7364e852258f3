"""The tree's records and rules, apart from the store: node statuses, the SQLite schema, the `Node`
record, and deferred acceptance's decision for a node just evaluated (README.md, "Deferred acceptance").
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from leka.core.levels import level_names
from leka.core.types import Edit, EvalResult, Level

DB_NAME = "tree.sqlite"
NODES_DIR = "nodes"
SCHEMA_VERSION = 1
NODE_RECORD = "_node.json"  # the human-readable record written next to a node's mirrored artifacts


class NodeStatus(str, Enum):
    PROPOSED = "proposed"  # edit accepted, candidate not built yet
    BUILT = "built"  # compiled, not yet checked
    FAILED = "failed"  # did not compile / run / match the reference
    CORRECT = "correct"  # matches the reference, no trustworthy timing
    MEASURED = "measured"  # correct and timed; accepted into the search
    PENDING = "pending"  # correct and timed but slower than its parent: acceptance deferred
    PRUNED = "pruned"  # given up on (deferral ran out, or an ancestor was pruned)
    INVALIDATED = "invalidated"  # a result later found untrustworthy

    def __str__(self) -> str:
        return self.value


# Statuses a search may expand from, and statuses after which a node's evaluation is over.
FRONTIER = (NodeStatus.CORRECT, NodeStatus.MEASURED, NodeStatus.PENDING)
SETTLED = (NodeStatus.FAILED, NodeStatus.CORRECT, NodeStatus.MEASURED, NodeStatus.PENDING, NodeStatus.PRUNED)
SETTLED_VALUES = frozenset(s.value for s in SETTLED)


def level_rank(level: str | None) -> int:
    """A level's place in the level table, top down (-1 for the root, which has none)."""
    return -1 if level is None else level_names().index(level)


SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS tree_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    parent INTEGER REFERENCES nodes(id),
    level TEXT,
    edit TEXT,
    candidate_hash TEXT NOT NULL,
    status TEXT NOT NULL,
    result TEXT,
    profile TEXT,
    route_reason TEXT NOT NULL DEFAULT '',
    meta TEXT NOT NULL DEFAULT '{}',
    speedup REAL,            -- copied out of `result` (correct results only) so best-k is one index scan
    correct INTEGER NOT NULL DEFAULT 0,
    timing_valid INTEGER NOT NULL DEFAULT 0,
    defer_left INTEGER,      -- follow-ups left while pending
    followups TEXT,          -- JSON list of descendant ids already counted against defer_left
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS nodes_parent ON nodes(parent);
CREATE INDEX IF NOT EXISTS nodes_hash ON nodes(candidate_hash);
CREATE INDEX IF NOT EXISTS nodes_status ON nodes(status);
-- best-k walks this index from the top and stops after k rows
CREATE INDEX IF NOT EXISTS nodes_best ON nodes(speedup DESC, id)
    WHERE speedup IS NOT NULL AND correct=1 AND timing_valid=1;
CREATE TABLE IF NOT EXISTS artifacts (
    node_id INTEGER NOT NULL REFERENCES nodes(id),
    name TEXT NOT NULL,
    is_text INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (node_id, name)
) WITHOUT ROWID;
"""

NODE_COLUMNS = ", ".join(f"nodes.{c}" for c in (
    "id", "parent", "level", "edit", "candidate_hash", "status", "result", "profile", "route_reason", "meta",
    "defer_left", "created", "updated")) + (", "
         "(SELECT group_concat(name, char(10)) FROM artifacts a WHERE a.node_id = nodes.id) AS artifact_names")


class Node(BaseModel):
    """One candidate in the tree, as read back from the store."""

    model_config = ConfigDict(frozen=True)

    id: int
    parent: int | None = None
    level: Level | None = None
    edit: Edit | None = None
    candidate_hash: str
    status: NodeStatus
    result: EvalResult | None = None
    profile: dict[str, Any] | None = None
    route_reason: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)
    defer_left: int | None = None
    artifacts: list[str] = Field(default_factory=list)  # artifact names, sorted
    created: float
    updated: float

    @property
    def artifacts_dir(self) -> str:
        """Where the artifacts are mirrored, relative to the run folder (`Tree.artifact_dir` for a Path)."""
        return f"{NODES_DIR}/{self.id}"

    @property
    def speedup(self) -> float | None:
        r = self.result
        return r.speedup if r is not None and r.correct else None


def check_artifact_name(name: str) -> str:
    # plain string checks: this runs for every artifact of every node
    if (not name or name.startswith("/") or "\\" in name or not name.isprintable()
            or any(part in ("", ".", "..") for part in name.split("/"))):
        raise ValueError(f"bad artifact name {name!r}: use a relative path like 'relax.py' or 'tir/main.py'")
    if name == NODE_RECORD:
        raise ValueError(f"artifact name {NODE_RECORD!r} is reserved")
    return name


def dump_json(x: BaseModel | dict[str, Any] | None) -> str | None:
    if x is None:
        return None
    if isinstance(x, BaseModel):
        return x.model_dump_json()
    return json.dumps(x, sort_keys=True, default=str)


def is_timed(r: EvalResult | None) -> bool:
    return r is not None and r.measured


def decide(result: EvalResult, level: str | None, ref: float | None, defer: int
            ) -> tuple[NodeStatus, int | None, str | None]:
    """(status, defer_left, prune reason) of a node just evaluated, given its parent's speedup `ref`."""
    st = derive_status(result)
    if st != NodeStatus.MEASURED or ref is None or result.speedup is None or result.speedup >= ref:
        return st, None, None
    if defer > 0 and level is not None and level_rank(level) < len(level_names()) - 1:
        return NodeStatus.PENDING, defer, None
    return NodeStatus.PRUNED, None, f"slower than its parent ({result.speedup:.4g} < {ref:.4g}), no deferral"


def derive_status(result: EvalResult) -> NodeStatus:
    """The status an evaluation result implies, before deferred acceptance is applied."""
    if not result.compiled or not result.correct:
        return NodeStatus.FAILED
    return NodeStatus.MEASURED if result.measured else NodeStatus.CORRECT
