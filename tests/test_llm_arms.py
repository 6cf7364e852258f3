"""The LLM policy's router reports and the flat arm's LLM agent, end to end against the wire-level
fake server (tests/fake_llm_server.py) on the tiny task: the real SDK client over HTTP, the agents'
parsing and legality checks, the graph, the evaluator and the tree. The scripted edits are made by the
rule agents (and a hand-written C++ kernel) for the very candidate the run expands."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_llm_server import FakeLLMServer  # noqa: E402

DATA = Path(__file__).parent / "data"
TASK = str(DATA / "tiny_task.py")
KERNEL = "fused_relu_multiply_add"
GOOD_CPP = f'''#include <cstdint>
extern "C" int32_t leka_{KERNEL}(float* x, float* w, float* y) {{
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 64; ++j) {{ float v = x[i * 64 + j]; y[i * 64 + j] = (v > 0 ? v : 0) * w[j] + v; }}
  return 0;
}}
'''
FAST = ["evaluator.timing_budget_s=0.5", "evaluator.max_pairs=5", "evaluator.seeds=[0]"]


@pytest.fixture(scope="module")
def l1_trace():
    """A legal L1 trace of the tiny task's one PrimFunc, from the rule L1 agent on the root."""
    from agents.rules import make_rule_agents
    from benchmark.task import load_task_file
    from leka import ir
    from leka.core.protocols import AgentContext

    task = load_task_file(TASK)
    root = ir.import_root(task)
    c0 = ir.root_candidate(task, root=root)
    edits = make_rule_agents("llvm", root_params=root.params)["L1"].propose(
        c0, AgentContext(task_id=task.id, backend="llvm", level="L1"))
    assert edits and edits[0].target == KERNEL, edits
    return edits[0]


def nodes(run_dir: Path) -> list[dict]:
    con = sqlite3.connect(run_dir / "tree.sqlite")
    try:
        rows = con.execute("SELECT id, parent, level, edit, result FROM nodes ORDER BY id").fetchall()
    finally:
        con.close()
    return [{"id": i, "parent": p, "level": lv, "edit": json.loads(e) if e else None,
             "result": json.loads(r) if r else None} for i, p, lv, e, r in rows]


def reports(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "llm_reports.jsonl").read_text().splitlines()]


def test_router_replies_reach_llm_reports(l1_trace, tmp_path):
    from leka.run import run

    reason = "the one kernel is scalar: schedule it"
    script = [{"when": {"tool": "route"}, "tool": {"name": "route", "arguments": {"level": "L1", "reason": reason}}},
              {"when": {"tool": "propose_edits"}, "tool": {"name": "propose_edits",
                                                            "arguments": {"edits": [l1_trace.model_dump()]}}}]
    with FakeLLMServer(script) as srv:
        s = run(TASK, overrides=["run.policy=llm", f"llm.model='compat:{srv.openai_url}|fake'", "run.routing=profile",
                                 "run.max_evals=2", "run.budget_s=300", f"run.out={tmp_path / 'out'}",
                                 f"baseline.cache_dir={tmp_path / 'cache'}", *FAST], quiet=True, live=False)
        routes = [q for q in srv.requests if q.method == "POST" and q.body["tools"][0]["function"]["name"] == "route"]
    d = Path(s["run_dir"])
    got = reports(d)
    router = [r for r in got if r["agent"] == "router"]
    # one line per route request the server answered, each holding the answer the model gave
    assert len(router) == len(routes) >= 1, got
    assert router[0]["calls"] == 1 and router[0]["failure"] is None and router[0]["usage"]["input_tokens"] > 0
    assert router[0]["replies"][0]["parsed"] is True and router[0]["replies"][0]["route"] == ["L1", reason]
    l1 = [r for r in got if r["agent"] == "L1"]
    assert l1 and l1[0]["accepted"] == 1 and l1[0]["replies"][0]["edits"] == [["trace", True]]
    assert [n["level"] for n in nodes(d)] == [None, "L1"]


def test_flat_llm_agent_edits_two_levels_in_one_reply(l1_trace, tmp_path):
    from leka.core.types import Edit
    from leka.exp.flat import flat_agents
    from leka.run import run

    l2 = Edit(level="L2", kind="source", target=KERNEL, rationale="a plain loop nest",
              payload={"language": "cpp", "text": GOOD_CPP, "entry": f"leka_{KERNEL}"})
    script = [{"tool": {"name": "propose_edits", "arguments": {"edits": [l1_trace.model_dump(), l2.model_dump()]}}}]
    with FakeLLMServer(script) as srv:
        s = run(TASK, overrides=["run.policy=llm", f"llm.model='compat:{srv.openai_url}|fake'", "run.max_evals=3",
                                 "run.budget_s=300", f"run.out={tmp_path / 'out'}",
                                 f"baseline.cache_dir={tmp_path / 'cache'}", *FAST],
                quiet=True, live=False, agents_factory=flat_agents)
        posts = [q for q in srv.requests if q.method == "POST"]
    # the root's expansion asked the one flat agent once (no router call), with the whole candidate shown
    first = posts[0].body
    assert [t["function"]["name"] for t in first["tools"]] == ["propose_edits"]
    assert set(first["tools"][0]["function"]["parameters"]["properties"]["edits"]["items"]["properties"]["level"]
               ["enum"]) == {"L0", "L1", "L2"}
    prompt = "\n".join(m["content"] for m in first["messages"])
    assert "the one optimiser of every level" in prompt
    for part in ("Current Relax module", "PrimFuncs of the lowered module", f"hottest first: {KERNEL}",
                 "Their current generated source", "## Profile of the current candidate"):
        assert part in prompt, part
    d = Path(s["run_dir"])
    tree = nodes(d)
    kids = {n["level"]: n for n in tree if n["parent"] == tree[0]["id"]}
    assert set(kids) == {"L1", "L2"}, [(n["id"], n["level"]) for n in tree]
    for lv, n in kids.items():  # both evaluated, both correct
        assert n["result"] and n["result"]["correct"], (lv, n["result"])
    assert kids["L1"]["edit"]["payload"]["trace"] == l1_trace.payload["trace"]
    assert kids["L2"]["edit"]["payload"]["text"] == GOOD_CPP
    flat = [r for r in reports(d) if r["agent"] == "flat"]
    assert flat and flat[0]["accepted"] == 2 and flat[0]["replies"][0]["edits"] == [["trace", True], ["source", True]]
    summary = json.loads((d / "summary.json").read_text())
    assert summary["llm"]["calls"] == len(posts) and summary["llm"]["input_tokens"] > 0


def test_arm_cost_is_the_ledgers_dollars_or_unpriced():
    from leka.exp.arms import ledger_cost
    from leka.llm.base import CallRecord, Ledger, cost_usd

    none = Ledger()
    assert ledger_cost(none.to_dict()) == 0.0  # no model called: nothing spent
    priced = Ledger()
    dollars = cost_usd("openai", "gpt-4o-mini", 1000, 200)
    priced.record(CallRecord(provider="openai", model="gpt-4o-mini", ok=True, input_tokens=1000, output_tokens=200,
                             cost_usd=dollars, priced=True))
    priced.record(CallRecord(provider="openai", model="gpt-4o-mini", ok=False, error_kind="rate_limit"))
    assert dollars > 0 and ledger_cost(priced.to_dict()) == pytest.approx(dollars)
    local = Ledger()  # a compat (local) model: tokens counted, no price known -> no invented $0
    local.record(CallRecord(provider="compat", model="fake", ok=True, input_tokens=10, output_tokens=5))
    assert ledger_cost(local.to_dict()) is None
