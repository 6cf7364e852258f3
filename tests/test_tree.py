"""The candidate tree: records round-trip, queries, branching, deferred acceptance, exports, CLI."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from candidate_tree import Node, NodeStatus, Tree
from candidate_tree.cli import app as tree_app
from candidate_tree.export import layout, page_data
from leka.core.types import Edit, EvalResult, UserError

ROOT = Path(__file__).resolve().parents[1]


def res(speedup: float | None, *, correct: bool = True, valid: bool = True, error: str | None = None) -> EvalResult:
    """A hand-built result: the tree's logic is under test here, not the evaluator."""
    return EvalResult(task="t/x", compiled=error != "compile", correct=correct, speedup=speedup,
                      timing_valid=valid if speedup is not None else None,
                      error_kind=error, error=None if error is None else f"{error} went wrong",
                      t_candidate_s=None if speedup is None else 1e-3 / speedup, t_baseline_s=1e-3, n_pairs=5)


def edit(level: str, kind: str = "pass", **payload: object) -> Edit:
    return Edit(level=level, kind=kind, payload=dict(payload), rationale=f"try {kind}")


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    t = Tree(tmp_path / "run", defer=2)
    yield t
    t.close()


def root(t: Tree, speedup: float = 1.0) -> int:
    return t.add_node(None, None, None, "root", result=res(speedup), route_reason="baseline",
                      artifacts={"relax.py": "def main(x):\n    y = add(x, x)\n    return y\n"})


# ----------------------------------------------------------------------------- records
def test_answer_is_never_a_slowdown_when_the_root_is_correct(tree: Tree) -> None:
    # seen on the H200 (l1_linear_classifier, OpenCL): the root's A/A timing was invalid and the only
    # validly timed node ran at 0.06x; the run answered that node
    r = tree.add_node(None, None, None, "root", result=res(1.3, valid=False))
    slow = tree.add_node(r, "L1", edit("L1", "tile"), "h1", result=res(0.06))
    assert tree.best(1)[0].id == slow
    assert tree.answer().id == r
    modest = tree.add_node(r, "L1", edit("L1", "tile", n=3), "h3", result=res(1.2))
    assert tree.answer().id == modest  # a real 1.2x is kept though the root's noisy A/A said 1.3
    fast = tree.add_node(r, "L1", edit("L1", "tile", n=2), "h2", result=res(1.4))
    assert tree.answer().id == fast


def test_answer_against_pytorch_is_the_best_node_below_one(tree: Tree) -> None:
    # against PyTorch eager every node may be slower than 1.0: the root's own speedup is the bar
    r = tree.add_node(None, None, None, "root", result=res(0.02))
    better = tree.add_node(r, "L1", edit("L1", "tile"), "h1", result=res(0.4))
    assert tree.answer().id == better
    tree.add_node(r, "L1", edit("L1", "tile", n=2), "h2", result=res(0.01, valid=True))
    assert tree.answer().id == better


def test_answer_without_a_correct_root_or_any_valid_timing(tree: Tree) -> None:
    r = tree.add_node(None, None, None, "root", result=res(None, correct=False, error="compile"))
    a = tree.add_node(r, "L1", edit("L1", "tile"), "h1", result=res(0.8, valid=False))
    b = tree.add_node(r, "L1", edit("L1", "tile", n=2), "h2", result=res(0.9, valid=False))
    assert tree.answer().id == b
    c = tree.add_node(r, "L1", edit("L1", "tile", n=3), "h3", result=res(0.5))
    assert tree.answer().id == c and a != c  # validly timed beats noisy when no root can answer


def test_node_round_trips_with_artifacts_and_mirror(tree: Tree) -> None:
    r = root(tree)
    e = edit("L0", "relax_text", text="fused")
    profile = {"hot": [{"func": "fused_add", "share": 0.8}]}
    nid = tree.add_node(r, "L0", e, "abc123", result=res(1.5), profile=profile, route_reason="graph-bound",
                        meta={"agent": "l0"}, artifacts={"relax.py": "new text\n", "tir/fused_add.py": "T",
                                                         "lib.so": b"\x7fELF\x00\x01"})
    n = tree.get(nid)
    assert isinstance(n, Node)
    assert (n.parent, n.level, n.edit, n.candidate_hash) == (r, "L0", e, "abc123")
    assert n.status is NodeStatus.MEASURED and n.speedup == 1.5
    assert n.result == res(1.5) and n.profile == profile and n.meta == {"agent": "l0"}
    assert n.route_reason == "graph-bound" and n.created <= n.updated
    assert n.artifacts == ["lib.so", "relax.py", "tir/fused_add.py"]
    assert tree.artifact(nid, "lib.so") == b"\x7fELF\x00\x01"
    assert tree.artifact(nid, "tir/fused_add.py") == "T"
    assert tree.artifact(nid, "missing") is None
    d = tree.artifact_dir(nid)
    assert d == tree.run_dir / "nodes" / str(nid)
    assert (d / "tir" / "fused_add.py").read_text() == "T" and (d / "lib.so").read_bytes() == b"\x7fELF\x00\x01"
    assert json.loads((d / "_node.json").read_text())["candidate_hash"] == "abc123"
    # The mirror is only a copy: a damaged file is restored from the database.
    (d / "relax.py").write_text("garbage")
    assert (tree.artifact_dir(nid) / "relax.py").read_text() == "new text\n"
    # Reopening reads the same record.
    tree.close()
    t2 = Tree(tree.run_dir)
    assert t2.get(nid) == n and len(t2) == 2
    t2.close()
    con = sqlite3.connect(tree.run_dir / "tree.sqlite")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()


def test_bad_inputs_are_refused_without_writing(tree: Tree) -> None:
    r = root(tree)
    with pytest.raises(ValueError, match="parent node 99"):
        tree.add_node(99, "L0", edit("L0"), "h")
    with pytest.raises(ValueError, match="bad artifact name"):
        tree.add_node(r, "L0", edit("L0"), "h", artifacts={"../escape.py": "x"})
    with pytest.raises(ValueError, match="bad level"):
        tree.add_node(r, "L3", None, "h")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="candidate_hash"):
        tree.add_node(r, "L0", edit("L0"), "")
    with pytest.raises(KeyError):
        tree.get(42)
    assert tree.count() == 1
    assert not (tree.run_dir.parent / "escape.py").exists()


def test_update_is_atomic(tree: Tree) -> None:
    r = root(tree)
    nid = tree.add_node(r, "L1", edit("L1", "trace"), "h1", meta={"a": 1})
    assert tree.get(nid).status is NodeStatus.PROPOSED and tree.get(nid).result is None
    # An artifact of the wrong type fails mid-transaction: the status/meta change must not land either.
    with pytest.raises(TypeError):
        tree.update(nid, status="built", meta={"b": 2}, artifacts={"ok.txt": "fine", "bad": 3})  # type: ignore[dict-item]
    n = tree.get(nid)
    assert n.status is NodeStatus.PROPOSED and n.meta == {"a": 1} and n.artifacts == []
    n = tree.update(nid, status="built", meta={"b": 2}, artifacts={"ok.txt": "fine"})
    assert n.status is NodeStatus.BUILT and n.meta == {"a": 1, "b": 2} and n.artifacts == ["ok.txt"]
    n = tree.update(nid, result=res(1.2))  # a result without a status derives it
    assert n.status is NodeStatus.MEASURED and n.speedup == 1.2 and n.updated >= n.created
    with pytest.raises(KeyError):
        tree.update(1234, status="failed")


# ----------------------------------------------------------------------------- queries
def test_queries_best_lineage_children_frontier_hash(tree: Tree) -> None:
    r = root(tree)
    a = tree.add_node(r, "L0", edit("L0"), "ha", result=res(1.4))
    b = tree.add_node(a, "L1", edit("L1", "trace"), "hb", result=res(2.0))
    c = tree.add_node(a, "L1", edit("L1", "trace", n=2), "hc", result=res(None, correct=False, error="mismatch"))
    d = tree.add_node(b, "L2", edit("L2", "source"), "hd", result=res(3.0, valid=False))  # noisy timing
    e = tree.add_node(b, "L2", edit("L2", "source", n=2), "he", result=res(2.5))
    f = tree.add_node(r, "L1", edit("L1", "trace", n=3), "hf")  # not evaluated yet
    assert [n.status for n in tree.nodes()] == ["measured", "measured", "measured", "failed", "correct",
                                                "measured", "proposed"]
    assert [n.id for n in tree.best(3)] == [e, b, a]  # failed, untimed and invalid timing are left out
    assert [n.id for n in tree.best(100)] == [e, b, a, r]
    assert [n.id for n in tree.lineage(e)] == [r, a, b, e]
    assert [n.id for n in tree.lineage(r)] == [r]
    assert [n.id for n in tree.children(a)] == [b, c] and tree.children(c) == []
    assert [n.id for n in tree.frontier()] == [r, a, b, d, e]
    assert [n.id for n in tree.roots()] == [r]
    assert tree.by_hash("hb").id == b and tree.by_hash("nope") is None
    assert len(tree) == tree.count() == 7 and f in {n.id for n in tree.nodes()}
    with pytest.raises(KeyError):
        tree.lineage(999)


def test_duplicate_candidate_reuses_the_evaluated_node(tree: Tree) -> None:
    r = root(tree)
    first = tree.add_node(r, "L1", edit("L1", "trace"), "same")  # proposed, never evaluated
    evaluated = tree.add_node(r, "L1", edit("L1", "trace", k=1), "same", result=res(1.3))
    assert tree.by_hash("same").id == evaluated  # the one holding a result wins over an older empty one
    tree.invalidate(evaluated, "re-check failed")
    assert tree.get(evaluated).status is NodeStatus.INVALIDATED
    assert tree.get(evaluated).meta["invalidated_reason"] == "re-check failed"
    assert evaluated not in {n.id for n in tree.best(10)} | {n.id for n in tree.frontier()}
    assert tree.by_hash("same").id == first
    again = tree.add_node(r, "L1", edit("L1", "trace", k=2), "same", result=res(1.1))
    assert tree.by_hash("same").id == again


def test_branching_from_any_earlier_node(tree: Tree) -> None:
    r = root(tree)
    a = tree.add_node(r, "L0", edit("L0"), "a", result=res(1.2))
    b = tree.add_node(a, "L1", edit("L1", "trace"), "b", result=res(1.5))
    c = tree.add_node(b, "L2", edit("L2", "source"), "c", result=res(1.7))
    # Roll back to the root and to `a`: new branches, old ones untouched.
    x = tree.add_node(r, "L1", edit("L1", "trace", alt=1), "x", result=res(1.3))
    y = tree.add_node(a, "L2", edit("L2", "source", alt=1), "y", result=res(1.9))
    assert [n.id for n in tree.lineage(x)] == [r, x]
    assert [n.id for n in tree.lineage(y)] == [r, a, y]
    assert [n.id for n in tree.lineage(c)] == [r, a, b, c]
    assert [n.id for n in tree.children(r)] == [a, x] and [n.id for n in tree.children(a)] == [b, y]
    assert tree.best(1)[0].id == y


def test_reader_sees_writer_commits_concurrently(tmp_path: Path) -> None:
    writer = Tree(tmp_path / "run")
    r = root(writer)
    reader = Tree(tmp_path / "run", create=False)
    seen: list[int] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.append(reader.count())
            last = reader.nodes()[-1]
            assert reader.artifact(last.id, "relax.py") is not None  # never a node without its artifacts

    th = threading.Thread(target=read)
    th.start()
    for i in range(60):
        writer.add_node(r, "L1", edit("L1", "trace", i=i), f"h{i}", result=res(1 + i / 100),
                        artifacts={"relax.py": f"# {i}\n"})
    stop.set()
    th.join()
    assert reader.count() == 61 and seen and seen == sorted(seen)
    writer.close()
    reader.close()
    with pytest.raises(FileNotFoundError):
        Tree(tmp_path / "other", create=False)


# ----------------------------------------------------------------------------- deferred acceptance
def test_deferred_node_is_accepted_when_a_lower_level_follow_up_beats_its_parent(tree: Tree) -> None:
    r = root(tree, 1.0)
    p = tree.add_node(r, "L0", edit("L0"), "p", result=res(1.2))
    # An L0 rewrite slower than its parent: not thrown away, pending with 2 follow-ups left.
    a = tree.add_node(p, "L0", edit("L0", "relax_text"), "a", result=res(0.9))
    assert (tree.get(a).status, tree.get(a).defer_left) == (NodeStatus.PENDING, 2)
    assert a in {n.id for n in tree.frontier()}
    # Same-level work below it does not use up the deferral (the rule counts lower levels only).
    a2 = tree.add_node(a, "L0", edit("L0", "pass"), "a2", result=res(1.0))
    assert tree.get(a2).status is NodeStatus.MEASURED  # faster than its own parent a
    assert tree.get(a).defer_left == 2
    # First L1 follow-up: better than a, still not better than p (1.2): counted.
    b = tree.add_node(a, "L1", edit("L1", "trace"), "b", result=res(1.1))
    assert tree.get(b).status is NodeStatus.MEASURED
    assert (tree.get(a).status, tree.get(a).defer_left) == (NodeStatus.PENDING, 1)
    # Second follow-up (an L2 grandchild) beats p: the rewrite paid off and is accepted.
    c = tree.add_node(b, "L2", edit("L2", "source"), "c", result=res(1.5))
    a_node = tree.get(a)
    assert a_node.status is NodeStatus.MEASURED and a_node.defer_left is None
    assert a_node.meta["accepted_by"] == c
    assert [n.id for n in tree.best(1)] == [c]


def test_deferred_node_is_pruned_with_its_branch_when_follow_ups_run_out(tree: Tree) -> None:
    r = root(tree, 1.0)
    a = tree.add_node(r, "L0", edit("L0"), "a", result=res(0.8))
    other = tree.add_node(r, "L1", edit("L1", "trace"), "o", result=res(1.1))
    b = tree.add_node(a, "L1", edit("L1", "trace"), "b", result=res(0.9))
    failed = tree.add_node(b, "L2", edit("L2", "source"), "f", result=res(None, correct=False, error="compile"))
    assert tree.get(failed).status is NodeStatus.FAILED
    # A failed follow-up is still a follow-up: both tries are used up, and the branch is closed.
    n = tree.get(a)
    assert n.status is NodeStatus.PRUNED and n.defer_left is None
    assert "follow-up" in n.meta["pruned_reason"]
    assert tree.get(b).status is NodeStatus.PRUNED and tree.get(b).meta["pruned_reason"] == f"ancestor {a} pruned"
    assert tree.get(failed).status is NodeStatus.FAILED  # not live, left as it was
    assert [x.id for x in tree.frontier()] == [r, other]
    assert [x.id for x in tree.best(5)] == [other, r]
    assert {x.id for x in tree.best(5, include_pruned=True)} == {other, r, a, b}
    # Rollback to a pruned node is still allowed; the new child is judged against it as usual.
    z = tree.add_node(a, "L1", edit("L1", "trace", z=1), "z", result=res(1.3))
    assert tree.get(z).status is NodeStatus.MEASURED and tree.get(a).status is NodeStatus.PRUNED


def test_deferral_edge_cases(tmp_path: Path) -> None:
    t = Tree(tmp_path / "r0", defer=0)
    r = root(t, 1.0)
    a = t.add_node(r, "L0", edit("L0"), "a", result=res(0.9))
    assert t.get(a).status is NodeStatus.PRUNED  # defer=0: prune at once
    tie = t.add_node(r, "L0", edit("L0", n=1), "tie", result=res(1.0))
    assert t.get(tie).status is NodeStatus.MEASURED  # equal is not slower
    # A per-call override, and the lowest level has no lower-level follow-ups to wait for.
    b = t.add_node(r, "L1", edit("L1", "trace"), "b", result=res(0.7), defer=1)
    assert (t.get(b).status, t.get(b).defer_left) == (NodeStatus.PENDING, 1)
    c = t.add_node(r, "L2", edit("L2", "source"), "c", result=res(0.7), defer=3)
    assert t.get(c).status is NodeStatus.PRUNED
    t.close()

    t = Tree(tmp_path / "r1", defer=3)
    r = root(t, 1.0)
    a = t.add_node(r, "L0", edit("L0"), "a", result=res(0.5))
    b = t.add_node(a, "L1", edit("L1", "trace"), "b", result=res(0.6))
    assert t.get(a).defer_left == 2
    assert t.settle(b) is NodeStatus.MEASURED and t.settle(b) is NodeStatus.MEASURED
    assert t.get(a).defer_left == 2  # re-settling a counted follow-up does not count it again
    # A follow-up written in two steps (proposed, then its result) is counted once, when it settles.
    c = t.add_node(b, "L2", edit("L2", "source"), "c")
    assert t.get(a).defer_left == 2
    t.update(c, result=res(0.55))
    assert t.get(c).status is NodeStatus.PRUNED  # L2 slower than parent: no deferral
    assert t.get(a).defer_left == 1
    t.close()
    # Pending state survives reopening; expire_pending closes what is left at the end of a run.
    t = Tree(tmp_path / "r1", defer=3)
    assert (t.get(a).status, t.get(a).defer_left) == (NodeStatus.PENDING, 1)
    assert t.expire_pending() == [a]
    assert t.get(a).status is NodeStatus.PRUNED and t.get(b).status is NodeStatus.PRUNED
    assert t.frontier() == [t.get(r)]
    t.close()


def test_settle_false_stores_status_as_given(tree: Tree) -> None:
    r = root(tree, 1.0)
    a = tree.add_node(r, "L0", edit("L0"), "a", result=res(0.5), status="measured", settle=False)
    assert tree.get(a).status is NodeStatus.MEASURED
    assert tree.settle(a) is NodeStatus.PENDING and tree.get(a).defer_left == 2
    b = tree.add_node(r, "L1", edit("L1", "trace"), "b", result=res(0.7), status="pending", settle=False)
    assert (tree.get(b).status, tree.get(b).defer_left) == (NodeStatus.PENDING, 2)
    tree.update(a, status="correct", settle=False)
    assert (tree.get(a).status, tree.get(a).defer_left) == (NodeStatus.CORRECT, None)


# ----------------------------------------------------------------------------- exports
def _sample(t: Tree) -> dict[str, int]:
    r = root(t, 1.0)
    a = t.add_node(r, "L0", edit("L0", "relax_text"), "a", result=res(1.3), route_reason="memory-bound <graph>",
                   artifacts={"relax.py": "def main(x):\n    y = fused_add(x)\n    return y\n",
                              "candidate.json": '{"l1": {}}'})
    b = t.add_node(a, "L1", edit("L1", "trace", steps=["split", "vectorize"]), "b", result=res(2.0),
                   route_reason="compute-bound: schedule </script><script>alert(1)</script>",
                   artifacts={"relax.py": "def main(x):\n    y = fused_add(x)\n    return y\n",
                              "tir/fused_add.py": "for i in range(64): pass\n", "candidate.json": '{"l1": {"k": 1}}'})
    f = t.add_node(a, "L2", edit("L2", "source"), "f", result=res(None, correct=False, error="mismatch"))
    return {"r": r, "a": a, "b": b, "f": f}


def test_json_and_networkx_exports(tree: Tree, tmp_path: Path) -> None:
    ids = _sample(tree)
    doc = json.loads(tree.to_json(tmp_path / "out" / "tree.json"))
    assert doc["count"] == 4 and [n["id"] for n in doc["nodes"]] == sorted(ids.values())
    assert json.loads((tmp_path / "out" / "tree.json").read_text()) == doc
    by = {n["id"]: n for n in doc["nodes"]}
    assert by[ids["b"]]["edit"]["payload"]["steps"] == ["split", "vectorize"]
    assert by[ids["b"]]["result"]["speedup"] == 2.0 and by[ids["f"]]["status"] == "failed"
    g = tree.to_networkx()
    assert set(g.nodes) == set(ids.values())
    assert set(g.edges) == {(ids["r"], ids["a"]), (ids["a"], ids["b"]), (ids["a"], ids["f"])}
    assert g.nodes[ids["b"]]["speedup"] == 2.0 and g.nodes[ids["b"]]["level"] == "L1"
    assert g.nodes[ids["f"]]["speedup"] is None and g.nodes[ids["r"]]["parent"] is None


def test_html_export_is_self_contained_with_diffs(tree: Tree, tmp_path: Path) -> None:
    ids = _sample(tree)
    data = page_data(tree)
    by = {n["id"]: n for n in data["nodes"]}
    assert data["best"] == ids["b"]
    # relax.py differs between root and a; the diff is computed at export time.
    assert "-    y = add(x, x)\n+    y = fused_add(x)\n" in by[ids["a"]]["diff"]
    assert by[ids["a"]]["diff"].startswith(f"--- {ids['r']}/relax.py\n+++ {ids['a']}/relax.py\n")
    # b: relax.py unchanged, candidate.json changed; tir/ only exists in b, so it is not diffed.
    assert "relax.py" not in by[ids["b"]]["diff"] and '+{"l1": {"k": 1}}' in by[ids["b"]]["diff"]
    assert by[ids["f"]]["diff"] == "" and "no text artifact" in by[ids["f"]]["diff_note"]
    assert by[ids["r"]]["frac"] == 0.0 and by[ids["b"]]["frac"] == 1.0 and by[ids["f"]]["frac"] is None
    out = tree.export_html(tmp_path / "view" / "tree.html")
    page = out.read_text()
    assert "</script><script>alert(1)" not in page  # embedded data cannot close the script element
    assert page.count("</script>") == 2
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page) and "@import" not in page
    assert "fetch(" not in page and "XMLHttpRequest" not in page


def test_layout_centres_parents_over_children() -> None:
    def n(i: int, p: int | None) -> Node:
        return Node(id=i, parent=p, candidate_hash=str(i), status="proposed", created=0.0, updated=0.0)

    pos = layout([n(1, None), n(2, 1), n(3, 1), n(4, 3), n(5, 3), n(6, None)])
    assert pos[2] == (0.0, 1) and pos[4] == (1.0, 2) and pos[5] == (2.0, 2)
    assert pos[3] == (1.5, 1) and pos[1] == (0.75, 0) and pos[6][0] > pos[5][0]
    chain = layout([n(1, None)] + [n(i, i - 1) for i in range(2, 5001)])  # deep: no recursion
    assert chain[5000] == (0.0, 4999)


# ----------------------------------------------------------------------------- CLI
def test_cli_show_and_export(tree: Tree, tmp_path: Path) -> None:
    ids = _sample(tree)
    runner = CliRunner()
    run = str(tree.run_dir)
    out = runner.invoke(tree_app, ["show", run])
    assert out.exit_code == 0, out.output
    assert "4 nodes" in out.output and "2.000x" in out.output and "memory-bound" in out.output
    assert "failed" in out.output and "trace" in out.output
    out = runner.invoke(tree_app, ["show", run, "--best", "1"])
    assert out.exit_code == 0 and "2.000x" in out.output and "1.300x" not in out.output
    out = runner.invoke(tree_app, ["show", run, "--lineage", str(ids["b"])])
    assert out.exit_code == 0 and "lineage of node" in out.output
    rows = [ln for ln in out.output.splitlines() if re.match(r"^\W*\s+\d+\s", ln)]
    assert len(rows) == 3
    html = tmp_path / "x" / "t.html"
    out = runner.invoke(tree_app, ["export", run, "--html", str(html), "--json", str(tmp_path / "t.json")])
    assert out.exit_code == 0, out.output
    assert html.is_file() and json.loads((tmp_path / "t.json").read_text())["count"] == 4
    out = runner.invoke(tree_app, ["show", str(tmp_path / "empty")])
    assert isinstance(out.exception, UserError) and "no candidate tree" in str(out.exception)
    out = runner.invoke(tree_app, ["show", run, "--lineage", "77"])
    assert isinstance(out.exception, UserError)


def test_leka_tree_command_reports_a_missing_tree_on_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "leka.cli", "tree", "show", str(tmp_path)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines() == [f"leka: error: no candidate tree in {tmp_path} "
                                             f"(expected {tmp_path / 'tree.sqlite'})"]
