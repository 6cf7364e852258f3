"""The study's arms on the GPU backends, against the scripted wire-level server (fake_llm_server.py).

- Claude Code: `leka baseline claude-code --backend opencl|cuda` with the real, pinned CLI. The script
  reads the contract and the generated kernel, writes an OpenCL (CUDA) kernel file that computes
  nothing, measures it (incorrect), writes the generated kernel back with an edit, measures again
  (correct) and stops; the harness judges the second one.
- One-shot: `leka oneshot --backend opencl|cuda` whose one reply is the backend's rule L2 edit.

OpenCL runs on PoCL here (the plugin from `make opencl`); CUDA needs a GPU host (`-m gpu`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_llm_server import FakeLLMServer

DATA = Path(__file__).parent / "data"
TASK = str(DATA / "tiny_task.py")
ROOT = Path(__file__).resolve().parents[1]
KERNEL = "fused_relu_multiply_add"
KEY = "sk-ant-test-gpu-arm"
FAST_EVAL = ["evaluator.timing_budget_s=1", "evaluator.max_pairs=5", "evaluator.timeout_s=300"]


def generated_kernel(backend: str) -> str:
    """The kernel function TVM generates for the tiny task's PrimFunc (what views/sources/ shows)."""
    from benchmark.task import load_task_file
    from leka import ir
    from leka.ir import views as V

    task = load_task_file(TASK)
    root = ir.import_root(task)
    c0 = ir.root_candidate(task, backend, root)
    return V.source_view(c0, KERNEL, max_chars=1 << 20, root_params=root.params)


def tool(name: str, **arguments) -> dict:
    return {"tool": {"name": name, "arguments": arguments}}


def run_arm(backend: str, suffix: str, tmp_path: Path) -> tuple[dict, Path, str, list]:
    text = generated_kernel(backend)
    brace = text.index("{") + 1
    wrong = text[:brace] + "\n}\n"  # writes no output: the check catches it
    good = text[:brace] + "\n  // edited by the agent: the same arithmetic\n" + text[brace:]
    f = f"{{cwd}}/candidate/l2/{KERNEL}{suffix}"
    script = [tool("Read", file_path="{cwd}/CONTRACT.md"),
              tool("Read", file_path=f"{{cwd}}/views/sources/{KERNEL}{suffix}"),
              tool("Write", file_path=f, content=wrong),
              tool("Bash", command="./measure", description="measure"),
              tool("Write", file_path=f, content=good),
              tool("Bash", command="./measure", description="measure again"),
              {"text": "Done."}]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    with FakeLLMServer(script) as srv:
        p = subprocess.run([sys.executable, "-m", "leka.cli", "baseline", "claude-code", "--task", TASK,
                            "--backend", backend, "--budget", "10m", "--model", "fake-model", "--out",
                            str(tmp_path / "runs"), "--base-url", srv.url, "--max-retries", "0",
                            *[a for s in FAST_EVAL for a in ("--set", s)]],
                           capture_output=True, text=True, timeout=900, cwd=ROOT, env={**env, "ANTHROPIC_API_KEY": KEY})
        msgs = [r for r in srv.requests if r.path.startswith("/v1/messages") and "count_tokens" not in r.path]
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    row = json.loads(p.stdout.strip().splitlines()[-1])
    return row, Path(row["run_dir"]), good, msgs


def check_row(row: dict, run_dir: Path, good: str, msgs: list, backend: str, suffix: str) -> None:
    ws = run_dir / "workspace"
    contract = (ws / "CONTRACT.md").read_text()
    assert f"candidate/l2/<primfunc>{suffix}" in contract and "blockIdx.x" in contract  # the backend's text
    assert "g++" not in contract  # not the CPU's
    assert (ws / "views" / "sources" / f"{KERNEL}{suffix}").is_file()
    assert (ws / "views" / "scheduled" / f"{KERNEL}.py").read_text().count("thread_binding") >= 1
    assert KERNEL in (ws / "views" / "profile.txt").read_text()
    assert "How it is judged" in json.dumps(msgs[1].body["messages"])  # the contract reached the model
    evals = [json.loads(x) for x in (run_dir / "evals.jsonl").read_text().splitlines()]
    # on failure, each evaluation's verdict with its reason (a GPU run's log is all one gets back)
    assert [e["correct"] for e in evals] == [False, True], [(e["correct"], e.get("error_kind"), e.get("error"))
                                                           for e in evals]
    assert (run_dir / "evals" / "002" / "candidate" / "l2" / f"{KERNEL}{suffix}").read_text() == good
    # the judged row: the harness's own evaluation of the second snapshot, on this backend
    assert (run_dir / "judged.txt").read_text().strip() == "evals/002/candidate"
    cand = json.loads((run_dir / "candidate.json").read_text())
    assert cand["backend"] == backend
    assert [(e["language"], e["entry"], e["text"]) for e in cand["levels"]["L2"]["entries"].values()] == [(backend, f"{KERNEL}_kernel", good)]
    final = json.loads((run_dir / "final_eval.json").read_text())
    assert final["backend"] == backend and final["correct"] is True
    assert row["status"] == "ok" and row["correct"] and row["compiled"] and row["evals"] == 2
    assert row["speedup"] == final["speedup"] and row["turns"] == 7 and row["input_tokens"] > 0


def test_claude_code_edits_an_opencl_kernel_on_pocl(opencl_plugin, tmp_path):
    row, run_dir, good, msgs = run_arm("opencl", ".cl", tmp_path)
    check_row(row, run_dir, good, msgs, "opencl", ".cl")


@pytest.mark.gpu
def test_claude_code_edits_a_cuda_kernel_on_the_gpu(tmp_path):
    from leka.arms.claude_code import find_cli
    from leka.backends import get_backend
    from leka.core.types import UserError

    why = get_backend("cuda").unavailable()
    if why:
        pytest.skip(f"cuda: {why}")
    try:
        find_cli()
    except UserError as e:  # the GPU machine has no registry: the CLI travels there only when carried
        pytest.skip(str(e))
    row, run_dir, good, msgs = run_arm("cuda", ".cu", tmp_path)
    check_row(row, run_dir, good, msgs, "cuda", ".cu")


def run_oneshot(backend: str, tmp_path: Path) -> tuple[dict, list]:
    """`leka oneshot` whose reply is the first edit the backend's rule L2 agent proposes on the root."""
    from agents.rules import make_rule_agents
    from benchmark.task import load_task_file
    from leka import ir
    from leka.core.protocols import AgentContext

    task = load_task_file(TASK)
    root = ir.import_root(task)
    c0 = ir.root_candidate(task, backend, root)
    edits = make_rule_agents(backend, root_params=root.params)["L2"].propose(
        c0, AgentContext(task_id=task.id, backend=backend, level="L2"))
    edits = [e for e in edits if e.kind == "source"]
    assert edits and edits[0].payload["language"] == backend, edits
    reply = {"tool": {"name": "propose_edits", "arguments": {"edits": [edits[0].model_dump()]}}}
    js = tmp_path / "res.json"
    with FakeLLMServer([reply]) as srv:
        p = subprocess.run([sys.executable, "-m", "leka.cli", "oneshot", "--task", TASK, "--backend", backend,
                            "--model", f"compat:{srv.openai_url}|fake", "--out", str(tmp_path / "out"),
                            "--json", str(js), "--quiet", *[a for s in FAST_EVAL for a in ("--set", s)],
                            "--set", f"baseline.cache_dir={tmp_path / 'cache'}"],
                           capture_output=True, text=True, timeout=900, cwd=ROOT)
        posts = [q for q in srv.requests if q.method == "POST"]
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    res = json.loads(js.read_text())
    assert len(posts) == 1
    prompt = "\n".join(m["content"] for m in posts[0].body["messages"])
    assert f"Target backend: {backend}" in prompt and f"# PrimFunc {KERNEL}" in prompt
    assert res["backend"] == backend and res["compile_at_1"] and res["correct_at_1"], res
    assert res["calls"] == 1 and res["input_tokens"] > 0 and res["rejected"] == []
    cand = json.loads((Path(res["run_dir"]) / "candidate.json").read_text())
    assert [(e["language"], e["text"]) for e in cand["levels"]["L2"]["entries"].values()] == [(backend, edits[0].payload["text"])]
    ev = json.loads((Path(res["run_dir"]) / "eval.json").read_text())
    assert ev["backend"] == backend and ev["correct"] and ev["speedup"] == res["speedup"]
    return res, posts


def test_oneshot_on_opencl_pocl(opencl_plugin, tmp_path):
    run_oneshot("opencl", tmp_path)


@pytest.mark.gpu
def test_oneshot_on_cuda(tmp_path):
    from leka.backends import get_backend

    why = get_backend("cuda").unavailable()
    if why:
        pytest.skip(f"cuda: {why}")
    run_oneshot("cuda", tmp_path)
