"""A candidate as a folder of files (leka/ir/files.py): written, read back as the same
decisions, illegal files named in the error, and `leka bench eval --candidate DIR`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark.task import resolve
from leka import ir
from leka.core.types import Edit
from leka.ir.edits import apply_edit
from leka.ir.files import CandidateFilesError, read_candidate, write_candidate, write_views

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "tests" / "data" / "tiny_task.py"
KERNEL = "fused_relu_multiply_add"
TRACE = [{"prim": "get_sblock", "args": ["compute"], "out": ["b"]}, {"prim": "compute_inline", "args": ["b"]}]
CPP = '''// entry: my_kernel
#include <cstdint>
extern "C" int32_t my_kernel(float* x, float* w, float* y) {
  for (int i = 0; i < 256; ++i) { float v = x[i]; y[i] = (v > 0 ? v : 0) * w[i % 64] + v; }
  return 0;
}
'''


@pytest.fixture(scope="module")
def start():
    task = resolve(str(TASK))
    return task, ir.root_candidate(task, "llvm")


def test_round_trip_with_l1_and_l2(start, tmp_path):
    task, root = start
    c = apply_edit(root, Edit(level="L1", kind="trace", target=KERNEL, payload={"trace": TRACE}),
                   workdir=tmp_path).candidate
    c = apply_edit(c, Edit(level="L2", kind="source", target=KERNEL,
                           payload={"language": "cpp", "text": CPP, "entry": "my_kernel"}), workdir=tmp_path).candidate
    assert c is not None and c.l1 and c.l2
    d = write_candidate(c, tmp_path / "cand")
    assert json.loads((d / "l1" / f"{KERNEL}.json").read_text()) == TRACE
    assert (d / "l2" / f"{KERNEL}.cpp").read_text().startswith("// entry: my_kernel")
    back = read_candidate(task, d, workdir=tmp_path / "w")
    assert back.digest == c.digest
    views = write_views(root, tmp_path / "views")
    assert KERNEL in (views / "kernels.txt").read_text()
    assert f"leka_{KERNEL}(" in (views / "l2_prototypes.txt").read_text()
    assert 'T.sblock("compute")' in (views / "tir" / f"{KERNEL}.py").read_text()


def test_a_tree_node_stores_the_same_layout(start, tmp_path):
    """One layout on disk: a node's files (leka.loop.nodes.artifacts) are the folder form's, plus the
    record; RUN_DIR/nodes/N without its candidate.json reads back as the same candidate."""
    from candidate_tree import Tree
    from leka.loop.nodes import artifacts

    task, root = start
    c = apply_edit(root, Edit(level="L1", kind="trace", target=KERNEL, payload={"trace": TRACE}),
                   workdir=tmp_path).candidate
    c = apply_edit(c, Edit(level="L2", kind="source", target=KERNEL,
                           payload={"language": "cpp", "text": CPP, "entry": "my_kernel"}), workdir=tmp_path).candidate
    d = write_candidate(c, tmp_path / "cand")
    folder = {p.relative_to(d).as_posix(): p.read_text() for p in d.rglob("*") if p.is_file()}
    arts = artifacts(c)
    assert sorted(arts) == sorted([*folder, "candidate.json"]) == \
        ["candidate.json", f"l1/{KERNEL}.json", f"l2/{KERNEL}.cpp", "relax.py"]
    assert all(arts[k] == v for k, v in folder.items())
    tree = Tree(tmp_path / "run")
    nid = tree.add_node(None, None, None, c.digest, artifacts=arts)
    node_dir = tree.artifact_dir(nid)
    tree.close()
    (node_dir / "candidate.json").unlink()
    assert read_candidate(task, node_dir, workdir=tmp_path / "w").digest == c.digest


def test_illegal_files_are_named(start, tmp_path):
    task, root = start
    d = write_candidate(root, tmp_path / "cand")
    (d / "l1" / f"{KERNEL}.json").write_text(json.dumps([{"prim": "get_sblock", "args": ["nope"], "out": ["b"]}]))
    with pytest.raises(CandidateFilesError, match=f"l1/{KERNEL}.json"):
        read_candidate(task, d, workdir=tmp_path / "w")
    (d / "l1" / f"{KERNEL}.json").unlink()
    (d / "l1" / "notes.txt").write_text("hi")
    with pytest.raises(CandidateFilesError, match="l1/notes.txt"):
        read_candidate(task, d, workdir=tmp_path / "w")
    with pytest.raises(CandidateFilesError, match="no relax.py"):
        read_candidate(task, tmp_path, workdir=tmp_path / "w")


def test_bench_eval_reports_an_illegal_folder_as_a_failed_candidate(start, tmp_path):
    _, root = start
    d = write_candidate(root, tmp_path / "cand")
    (d / "l2" / f"{KERNEL}.cpp").write_text("this is not C++\n")
    out = tmp_path / "eval.json"
    p = subprocess.run([sys.executable, "-m", "leka.cli", "bench", "eval", str(TASK), "--candidate", str(d),
                        "--json", str(out)], capture_output=True, text=True, cwd=tmp_path,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}, timeout=600)
    assert p.returncode == 1, p.stderr
    r = json.loads(out.read_text())
    assert r["compiled"] is False and r["error_kind"] == "compile" and f"l2/{KERNEL}.cpp" in r["error"]


def test_the_record_keeps_one_state_per_level_and_reads_its_older_form(start, tmp_path):
    """`Candidate.levels` holds L1's and L2's states (issue 48); a candidate.json of the older form,
    one field per level (l1, l2, target_opts), loads as the same candidate with the same digest."""
    task, root = start
    c = apply_edit(root, Edit(level="L1", kind="trace", target=KERNEL, payload={"trace": TRACE}),
                   workdir=tmp_path).candidate
    c = apply_edit(c, Edit(level="L2", kind="compile_options", payload={"options": {"fast-math-contract": True}}),
                   workdir=tmp_path).candidate
    rec = json.loads(c.model_dump_json())
    assert set(rec["levels"]) == {"L1", "L2"} and "l1" not in rec
    assert rec["levels"]["L2"] == {"entries": {}, "options": {"fast-math-contract": True}}
    older = {k: v for k, v in rec.items() if k != "levels"}
    older.update(l1=rec["levels"]["L1"]["entries"], l2={}, target_opts={"fast-math-contract": True})
    back = ir.Candidate.model_validate(older)
    assert back == c and back.digest == c.digest
    # the older fields written through model_copy land in the states; an empty state is left out
    cleared = c.model_copy(update={"l1": {}, "target_opts": {}})
    assert cleared.levels == {} and cleared.digest == root.digest
