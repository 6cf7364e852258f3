"""The LLM smoke grid (experiments/configs/smoke_llm.yaml) end to end: `leka exp run` with 2 workers,
the four LLM arms (leka under run.policy=llm, flat, oneshot, claude_code with the real CLI) on one task
on llvm and on opencl (PoCL), every arm's model one shared scripted wire-level server
(fake_llm_server.py) named by the grid's `model: compat:URL|NAME`.

The script is of kept specs (they answer each request by what it holds, not by its order, as the
workers' requests interleave): Claude Code reads CONTRACT.md, runs ./measure and stops; the router
routes to L1; every propose_edits request gets the backend's rule-agent L1 edit of the root candidate
(legal there; a later repeat on a child may be refused, which the agents report like any bad reply)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fake_llm_server import FakeLLMServer

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "experiments" / "configs" / "smoke_llm.yaml"
ARMS = ["leka", "flat", "oneshot", "claude_code"]
BACKENDS = ["llvm", "opencl"]


def rule_l1_edit(task_id: str, backend: str) -> dict:
    """The rule L1 agent's first edit of the task's root candidate on `backend` (a legal edit there)."""
    from agents.rules import make_rule_agents
    from benchmark.task import resolve
    from leka import ir
    from leka.core.protocols import AgentContext

    task = resolve(task_id)
    root = ir.import_root(task)
    c0 = ir.root_candidate(task, backend, root)
    edits = make_rule_agents(backend, root_params=root.params)["L1"].propose(
        c0, AgentContext(task_id=task.id, backend=backend, level="L1"))
    assert edits, f"the rule L1 agent has no edit of {task_id} on {backend}"
    return edits[0].model_dump()


def script(edits: dict[str, dict]) -> list[dict]:
    def keep(when: dict, **reply) -> dict:
        return {"keep": True, "when": when, **reply}

    def call(name: str, **arguments) -> dict:
        return {"name": name, "arguments": arguments}

    return [
        # Claude Code, by what its conversation holds so far: measured -> stop; read the contract -> measure
        keep({"tool": "Bash", "contains": '"minutes_left"'}, text="Done."),
        keep({"tool": "Bash", "contains": "How it is judged"}, tool=call("Bash", command="./measure",
                                                                          description="measure")),
        keep({"tool": "Bash"}, tool=call("Read", file_path="{cwd}/CONTRACT.md")),
        # LEKA's router and every propose_edits agent (leka's levels, flat, oneshot), per backend
        keep({"tool": "route"}, tool=call("route", level="L1", reason="schedule the one kernel")),
        *[keep({"tool": "propose_edits", "contains": f"Target backend: {b}."},
               tool=call("propose_edits", edits=[e])) for b, e in edits.items()],
        {"keep": True, "text": "Done."},
    ]


@pytest.fixture(scope="module")
def grid(opencl_plugin, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("llm_grid")
    cfg = yaml.safe_load(CONFIG.read_text())
    assert cfg["backends"] == BACKENDS and [a["name"] for a in cfg["arms"]] == ARMS
    (task_id,) = cfg["tasks"]["ids"]
    edits = {b: rule_l1_edit(task_id, b) for b in BACKENDS}
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}  # compat: no key needed
    with FakeLLMServer(script(edits)) as srv:
        # the committed config names port 8765; this run's server has its own
        cfg["model"] = re.sub(r"127\.0\.0\.1:\d+", f"127.0.0.1:{srv.port}", cfg["model"])
        cfg["baseline"]["cache_dir"] = str(tmp / "cache")
        cfgp = tmp / "smoke_llm.yaml"
        cfgp.write_text(yaml.safe_dump(cfg))
        exp_dir = tmp / "exp"
        p = subprocess.run([sys.executable, "-m", "leka.cli", "exp", "run", str(cfgp), "--out", str(exp_dir),
                            "--workers", "2"], capture_output=True, text=True, timeout=1800, cwd=ROOT, env=env)
        requests = list(srv.requests)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return {"exp_dir": exp_dir, "task": task_id, "requests": requests, "stdout": p.stdout}


def rows(exp_dir: Path) -> list[dict]:
    from leka.exp.store import Store

    st = Store(exp_dir)
    try:
        return st.results()
    finally:
        st.close()


def test_every_cell_has_a_row_with_the_models_cost(grid):
    got = {(r["backend"], r["arm"]): r for r in rows(grid["exp_dir"])}
    assert set(got) == {(b, a) for b in BACKENDS for a in ARMS}, sorted(got)
    for (b, a), r in got.items():
        assert r["error_kind"] != "job_failed", (b, a, r.get("error"))
        assert r["compiled"] and r["correct"] and r["evaluations"] >= 1, (b, a, r.get("error_kind"), r.get("error"))
        assert r["llm_calls"] > 0 and r["input_tokens"] > 0 and r["output_tokens"] > 0, (b, a, r)
        assert r["cost_usd"] is None, (b, a, r["cost_usd"])  # a compat server: nobody priced its calls
    for b in BACKENDS:  # LEKA's run asked the router, and its L1 agent's scripted edit became a node
        run_dir = grid["exp_dir"] / got[(b, "leka")]["run_dir"]
        reps = [json.loads(x) for x in (run_dir / "llm_reports.jsonl").read_text().splitlines()]
        assert any(r["agent"] == "router" for r in reps), reps
        assert any(r["agent"] == "L1" and r["accepted"] >= 1 for r in reps), reps
        assert got[(b, "leka")]["nodes_by_level"]["L1"] >= 1 and got[(b, "flat")]["nodes_by_level"]["L1"] >= 1
        flat = [json.loads(x) for x in (grid["exp_dir"] / got[(b, "flat")]["run_dir"] / "llm_reports.jsonl")
                .read_text().splitlines()]
        assert any(r["agent"] == "flat" and r["accepted"] >= 1 for r in flat), flat
        cc = json.loads((grid["exp_dir"] / got[(b, "claude_code")]["run_dir"] / "result.json").read_text())
        assert cc["status"] == "ok" and cc["evals"] == 1 and cc["model"] == "fake-model", cc


def test_every_arm_reached_the_one_server(grid):
    reqs = [q for q in grid["requests"] if q.method == "POST"]
    prompts = [json.dumps(q.body) for q in reqs]
    cc = [q for q in reqs if q.path.startswith("/v1/messages") and "count_tokens" not in q.path]
    # compat:URL|NAME -> the CLI sent NAME to URL without /v1, with the compat key (no ANTHROPIC_API_KEY)
    assert cc and all(q.body["model"] == "fake-model" and q.authorization == "none" for q in cc)
    assert any("the one optimiser of every level" in p for p in prompts)  # the flat LLM agent
    assert any("route" in [t.get("function", {}).get("name") for t in q.body.get("tools") or []] for q in reqs)
    for b in BACKENDS:
        assert any(f"Target backend: {b}." in p for p in prompts), b


def test_report_lists_every_arm_side_by_side_for_both_tasks(grid):
    md = (grid["exp_dir"] / "report.md").read_text()
    html = (grid["exp_dir"] / "report.html").read_text()
    for b in BACKENDS:  # each backend's Table 1 has one row per arm, in the config's order
        sec = md.split(f"### Table 1: {b} ", 1)[1].split("###", 1)[0]
        assert re.findall(r"^\| 1 \| (\w+) \|", sec, re.M) == ARMS, sec
        hsec = html.split(f"<h3>Table 1: {b} ", 1)[1].split("<h3>", 1)[0]
        assert re.findall(r"<tr><td>1</td><td>(\w+)</td>", hsec) == ARMS, hsec[:2000]
        for a in ARMS:  # and the job table links every cell's run folder
            assert f"{b}/{grid['task']}/{a}/s0" in md and f"{b}/{grid['task']}/{a}/s0" in html, (b, a)


def test_model_spec_to_the_clis_model_and_endpoint():
    from leka.arms.claude_code import model_endpoint
    from leka.core.types import UserError

    assert model_endpoint("compat:http://127.0.0.1:8000/v1|qwen?think=0", None) == ("qwen", "http://127.0.0.1:8000", True)
    assert model_endpoint("compat:http://h:9/v1/|m", "http://explicit") == ("m", "http://explicit", True)
    assert model_endpoint("anthropic:claude-x", None) == ("claude-x", None, False)
    assert model_endpoint("claude-x", "http://b") == ("claude-x", "http://b", False)
    with pytest.raises(UserError, match="compat needs"):
        model_endpoint("compat:http://h/v1", None)


if __name__ == "__main__":  # the grid's script for a by-hand run (smoke_llm.yaml's header says how)
    out, *backends = sys.argv[1:] or ["-"]
    tid = yaml.safe_load(CONFIG.read_text())["tasks"]["ids"][0]
    text = json.dumps(script({b: rule_l1_edit(tid, b) for b in backends or BACKENDS}), indent=1)
    sys.stdout.write(text + "\n") if out == "-" else Path(out).write_text(text)
